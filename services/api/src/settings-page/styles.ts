/** The page's one stylesheet, served as /settings/style.css (the CSP allows no inline style). */
export const STYLES = `
:root { color-scheme: light; --ink: #1d2a24; --muted: #55635c; --line: #d5ddd8; --accent: #1f6b45;
  --accent-ink: #fff; --danger: #a3261b; --warn: #8a5a00; --bg: #f6f8f7; font: 16px/1.5 system-ui, sans-serif; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: var(--bg); }
a { color: var(--accent); }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: 1rem; background: #fff; padding: .5rem; z-index: 1; }
header.top { background: #fff; border-bottom: 1px solid var(--line); }
header.top .inner { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .25rem 1rem; }
header.top p { margin: 0; color: var(--muted); }
.inner { max-width: 72rem; margin: 0 auto; padding: .75rem 1.25rem; }
main.inner { padding-top: 1.5rem; padding-bottom: 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .75rem; }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
section.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin-bottom: 1.5rem; }
section.card > h2:first-child { margin-top: 0; }
table { width: 100%; border-collapse: collapse; font-size: .95rem; }
caption { text-align: left; color: var(--muted); padding-bottom: .25rem; }
th, td { text-align: left; vertical-align: top; padding: .5rem .5rem; border-bottom: 1px solid var(--line); }
th { font-weight: 600; }
code, .mono { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; }
/* In a table an id, a name or a time is never broken inside: a column is at least as wide as its
   longest one (a time may break between its date and its clock). Stacked rows may break them. */
td code, th code, .nowrap { white-space: nowrap; }
label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .75rem 0; padding: .5rem .75rem; }
legend { font-weight: 600; padding: 0 .25rem; }
fieldset label { display: inline-flex; align-items: center; gap: .35rem; font-weight: 400; margin: .2rem 1rem .2rem 0; }
input[type=text], input[type=email], input[type=password], input[type=url], input[type=datetime-local],
input[type=number], select {
  font: inherit; padding: .45rem .6rem; border: 1px solid #9aa7a0; border-radius: 6px; width: 100%; max-width: 34rem; background: #fff; }
input[type=number] { max-width: 10rem; }
.hint { color: var(--muted); font-size: .9rem; margin: .2rem 0; }
button { font: inherit; cursor: pointer; border-radius: 6px; padding: .45rem .9rem; border: 1px solid var(--accent);
  background: var(--accent); color: var(--accent-ink); }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: var(--danger); border-color: var(--danger); }
button.link { background: none; border: none; color: var(--accent); text-decoration: underline; padding: 0; white-space: nowrap; }
:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
.inline { display: inline; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-top: .75rem; }
.notice, .error, .secret { border-radius: 6px; padding: .75rem 1rem; margin-bottom: 1rem; overflow-wrap: anywhere; }
.notice { background: #e5f3ea; border: 1px solid #9fceb0; }
.error { background: #fbe9e7; border: 1px solid #e3a59e; }
.secret { background: #fff8e1; border: 1px solid #e6c66a; }
.secret output { display: block; font-family: ui-monospace, monospace; font-size: 1.05rem; padding: .5rem; background: #fff;
  border: 1px dashed #c9a43a; margin: .5rem 0; overflow-wrap: anywhere; user-select: all; }
.state { display: inline-block; border-radius: 999px; padding: 0 .6rem; font-size: .85rem; font-weight: 600; border: 1px solid; }
.state-active { color: var(--accent); }
.state-failing { color: var(--warn); }
.state-switched_off, .state-disabled, .state-revoked { color: var(--danger); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre.block { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem;
  white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, monospace; font-size: .85rem; margin: .25rem 0 .75rem; }
nav.filter { display: flex; gap: 1rem; margin-bottom: .5rem; }
nav.filter a[aria-current] { font-weight: 700; text-decoration: none; color: var(--ink); }
.pager { display: flex; justify-content: space-between; gap: 1rem; }
.health-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); gap: 1rem; }
.health-grid figure { margin: 0; }
.health-grid figcaption { margin-top: .35rem; }
svg.health { display: block; width: 100%; height: 4.5rem; }
.axis { display: grid; grid-auto-flow: column; grid-auto-columns: minmax(0, 1fr); margin-top: .15rem;
  font-size: .75rem; line-height: 1.3; color: var(--muted); }
.axis span { white-space: nowrap; justify-self: start; }
.axis-days span { justify-self: center; }
details { margin: -.25rem 0 .75rem; }
summary { cursor: pointer; color: var(--accent); font-size: .9rem; }
.key { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; vertical-align: -.1rem; }
.key-ok { background: #1f6b45; } .key-failed { background: #a3261b; margin-left: .75rem; }
fieldset fieldset { border: none; padding: 0; margin: .25rem 0; }
/* Narrow screens (a phone is about 390 px wide): the header wraps as lines, not a column; a
   table's rows become stacked cards, each cell with its column's name; wide things wrap. */
@media (max-width: 40rem) {
  .inner { padding: .6rem .9rem; }
  header.top p, header.top form span { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; min-width: 0; }
  header.top p { flex: 1 1 100%; }
  header.top form { display: flex; gap: .75rem; justify-content: space-between; align-items: baseline; width: 100%; min-width: 0; }
  section.card { padding: .75rem .8rem; }
  h1 { font-size: 1.3rem; overflow-wrap: anywhere; }
  table, thead, tbody, tr, th, td, caption { display: block; width: 100%; }
  thead tr { position: absolute; left: -9999px; }
  tbody tr { border: 1px solid var(--line); border-radius: 6px; margin-bottom: .75rem; padding: .25rem .5rem; }
  th, td { border-bottom: none; padding: .3rem 0; overflow-wrap: anywhere; }
  td code, th code { white-space: normal; }
  td[data-label]::before { content: attr(data-label); display: block; font-weight: 600; font-size: .85rem; color: var(--muted); }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: .4rem; }
}
`;
