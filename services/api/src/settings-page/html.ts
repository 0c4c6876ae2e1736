import { escapeHtml, formatTime } from '@trips/contracts';

/** HTML that is already safe to send: only `html` and `raw` make one. */
export class SafeHtml {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

type Part = SafeHtml | string | number | boolean | null | undefined | Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof SafeHtml) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/**
 * The only way pages are written: every interpolated value is escaped unless it is itself
 * `html`, so a webhook description or URL can never become markup (no XSS by construction).
 */
export function html(strings: TemplateStringsArray, ...parts: Part[]): SafeHtml {
  let out = strings[0]!;
  parts.forEach((part, i) => {
    out += render(part) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/**
 * A time for people (docs/wording.md), inside a machine-readable <time>. Where it must wrap (a
 * narrow table column), it wraps between the date and the clock, never inside either.
 */
export function time(value: Date | null | undefined, empty = '—'): SafeHtml {
  if (!value) return html`${empty}`;
  const [date, ...clock] = formatTime(value).split(' ');
  const parts = html`<span class="nowrap">${date}</span> <span class="nowrap">${clock.join(' ')}</span>`;
  return html`<time datetime="${value.toISOString()}">${parts}</time>`;
}
