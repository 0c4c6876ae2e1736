import { escapeHtml } from './escape-html.ts';
import { EVENT_TYPES, EVENT_TYPE_NAMES } from './events.ts';
import { ICON_SVG } from './icon.ts';
import {
  openapiDocument,
  type OpenApiDocument,
  type Operation,
  type Parameter,
  type Ref,
  type Response,
} from './openapi.ts';
import type { JsonSchema } from './schemas.ts';

// The human-readable reference the API serves at /docs, rendered from the OpenAPI document so it
// says exactly what the document says. One self-contained page: no scripts, fonts or stylesheets
// from elsewhere, its icon a data URL (the page must work offline and behind strict CSPs). Every interpolated string
// goes through `escapeHtml` or `prose`, including the document's own text.

/** Escaped text with the documents' one piece of markup: `code` spans. Blank lines split paragraphs. */
function prose(text: string): string {
  return text
    .split(/\n{2,}/)
    .map((paragraph) => `<p>${inline(paragraph)}</p>`)
    .join('\n');
}

function inline(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** An id attribute safe by construction. */
const anchor = (prefix: string, name: string) => `${prefix}-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/**
 * A table whose first column names each row. Every other cell carries its column's heading
 * (data-label), which a narrow screen shows before the cell when the rows stack as cards.
 */
function table(label: string, headings: string[], rows: string[][]): string {
  if (rows.length === 0) return '';
  const labels = headings.map((h, i) => (i === 0 ? '' : ` data-label="${escapeHtml(h)}"`));
  return `<div class="table" role="region" aria-label="${escapeHtml(label)}" tabindex="0"><table>
<thead><tr>${headings.map((h) => `<th scope="col">${escapeHtml(h)}</th>`).join('')}</tr></thead>
<tbody>
${rows.map((cells) => `<tr>${cells.map((cell, i) => `<td${labels[i]}>${cell}</td>`).join('')}</tr>`).join('\n')}
</tbody></table></div>`;
}

function resolver(document: OpenApiDocument) {
  return function deref<T>(value: T | Ref): T {
    if (!value || typeof value !== 'object' || !('$ref' in value)) return value as T;
    const path = value.$ref.replace(/^#\//, '').split('/');
    return path.reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], document) as T;
  };
}

const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);

/** A schema in a few words: `string or null, date-time`, `integer, 1–200, default 50`, a link for a ref. */
function describeSchema(schema: JsonSchema): string {
  if (typeof schema.$ref === 'string') {
    const name = refName(schema.$ref);
    return `<a href="#${anchor('schema', name)}">${escapeHtml(name)}</a>`;
  }
  if ('const' in schema) return `<code>${escapeHtml(JSON.stringify(schema.const))}</code>`;
  if (Array.isArray(schema.enum))
    return `one of ${schema.enum.map((v) => `<code>${escapeHtml(v)}</code>`).join(', ')}`;
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0)
    return describeSchema(schema.allOf[0] as JsonSchema);
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  const main = types
    .map((type) =>
      type === 'array' && schema.items
        ? `array of ${describeSchema(schema.items as JsonSchema)}`
        : escapeHtml(type),
    )
    .join(' or ');
  const details: string[] = [];
  if (typeof schema.format === 'string') details.push(escapeHtml(schema.format));
  if (typeof schema.minimum === 'number' && typeof schema.maximum === 'number') {
    details.push(`${escapeHtml(schema.minimum)}–${escapeHtml(schema.maximum)}`);
  } else if (typeof schema.minimum === 'number') {
    details.push(`at least ${escapeHtml(schema.minimum)}`);
  }
  if ('default' in schema) details.push(`default ${escapeHtml(schema.default)}`);
  return [main || 'any', ...details].join(', ');
}

/** One row per field, nested fields as `parent.child`. */
function fieldRows(schema: JsonSchema, prefix = ''): string[][] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).flatMap(([name, field]) => {
    const path = `${prefix}${name}`;
    const nested = field.type === 'object' && field.properties ? fieldRows(field, `${path}.`) : [];
    const type = nested.length > 0 ? 'object' : describeSchema(field);
    return [
      [
        `<code>${escapeHtml(path)}</code>${required.has(name) ? '' : ' <span class="note">(optional)</span>'}`,
        type,
        inline(String(field.description ?? '')),
      ],
      ...nested,
    ];
  });
}

function renderOperation(
  document: OpenApiDocument,
  method: string,
  path: string,
  op: Operation,
  webhook = false,
) {
  const deref = resolver(document);
  const id = anchor(webhook ? 'webhook' : 'op', op.operationId);
  const scopes = op.security.flatMap((requirement) => Object.values(requirement).flat());
  const access = webhook
    ? 'Sent by the service; authenticated by its <code>Service-Signature</code>.'
    : op.security.length === 0
      ? 'Public: no key needed.'
      : `Requires a key with the scope ${scopes.map((s) => `<code>${escapeHtml(s)}</code>`).join(', ')}.`;

  const parameters = (op.parameters ?? []).map((p) => deref<Parameter>(p));
  const parameterRows = parameters.map((p) => [
    `<code>${escapeHtml(p.name)}</code>`,
    escapeHtml(p.in),
    describeSchema(p.schema) + (p.style === 'form' && p.explode === false ? ', comma-separated' : ''),
    p.required ? 'yes' : 'no',
    inline(p.description),
  ]);

  const responseRows: string[][] = [];
  const errorRows: string[][] = [];
  for (const [status, value] of Object.entries(op.responses)) {
    const response = deref<Response>(value);
    const media = response.content?.['application/json'];
    const headerNames = Object.keys(response.headers ?? {});
    const codes = Object.entries(media?.examples ?? {});
    for (const [code, example] of codes) {
      errorRows.push([escapeHtml(status), `<code>${escapeHtml(code)}</code>`, inline(example.summary)]);
    }
    responseRows.push([
      `<strong>${escapeHtml(status)}</strong>`,
      media ? describeSchema(media.schema) : '—',
      headerNames.map((name) => `<code>${escapeHtml(name)}</code>`).join(', ') || '—',
      // An error's codes are explained once, in the error code table below.
      codes.length > 0
        ? codes.map(([code]) => `<code>${escapeHtml(code)}</code>`).join(', ')
        : prose(response.description),
    ]);
  }

  const body = op.requestBody?.content['application/json'];
  return `<section class="operation" id="${id}" aria-labelledby="${id}-title">
<h3 id="${id}-title">${escapeHtml(op.summary)}</h3>
<p class="endpoint"><span class="method">${escapeHtml(method.toUpperCase())}</span> ${webhook ? escapeHtml(path) : `<code>${escapeHtml(path)}</code>`}</p>
<p class="access">${access}</p>
${prose(op.description)}
${parameterRows.length > 0 ? `<h4>Parameters</h4>\n${table(`Parameters of ${op.summary}`, ['Name', 'In', 'Type', 'Required', 'Description'], parameterRows)}` : ''}
${body ? `<h4>Request body</h4>\n<p>${describeSchema(body.schema)}: ${inline(op.requestBody!.description)}</p>` : ''}
<h4>Responses</h4>
${table(`Responses of ${op.summary}`, ['Status', 'Body', 'Headers', 'Meaning'], responseRows)}
${errorRows.length > 0 ? `<h4>Error codes</h4>\n${table(`Error codes of ${op.summary}`, ['Status', 'Code', 'When'], errorRows)}` : ''}
</section>`;
}

function renderHeaders(document: OpenApiDocument): string {
  return table(
    'Response headers',
    ['Header', 'Type', 'Description'],
    Object.entries(document.components.headers).map(([name, header]) => [
      `<code>${escapeHtml(name)}</code>`,
      describeSchema(header.schema),
      inline(header.description),
    ]),
  );
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #57606a; --line: #d0d7de;
  --code-bg: #f3f4f6; --accent: #0b5cad; --method-bg: #0b5cad; --method-fg: #ffffff; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9da7b3; --line: #30363d;
  --code-bg: #161b22; --accent: #6cb6ff; --method-bg: #6cb6ff; --method-fg: #0d1117; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); }
a { color: var(--accent); }
a:focus-visible, [tabindex]:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; }
.layout { display: grid; grid-template-columns: 16rem minmax(0, 1fr); max-width: 78rem; margin: 0 auto; }
@media (max-width: 60rem) { .layout { grid-template-columns: minmax(0, 1fr); } nav { position: static !important; max-height: none !important;
  border-right: none; border-bottom: 1px solid var(--line); } }
header { padding: 2rem 1.5rem 1rem; border-bottom: 1px solid var(--line); max-width: 78rem; margin: 0 auto; }
header p { color: var(--muted); margin: .25rem 0 0; }
nav { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow: auto; padding: 1.5rem;
  border-right: 1px solid var(--line); font-size: .9rem; }
nav ul { list-style: none; margin: 0; padding: 0 0 0 .75rem; } nav > ul { padding: 0; } nav li { margin: .2rem 0; }
main { padding: 0 1.5rem 4rem; min-width: 0; }
h1 { font-size: 1.9rem; margin: 0; } h2 { margin-top: 2.5rem; padding-top: 1rem; border-top: 1px solid var(--line); }
h3 { margin: 2rem 0 .5rem; } h4 { margin: 1.25rem 0 .5rem; font-size: 1rem; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code-bg);
  padding: .1em .3em; border-radius: 4px; overflow-wrap: anywhere; }
.endpoint { font-size: 1.05rem; } .endpoint code { background: none; padding: 0; }
.method { display: inline-block; background: var(--method-bg); color: var(--method-fg); font-weight: 700;
  font-size: .8rem; padding: .15rem .5rem; border-radius: 4px; letter-spacing: .03em; }
.access, .note { color: var(--muted); }
.operation { border-top: 1px dashed var(--line); }
.table { overflow-x: auto; margin: .5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; vertical-align: top; padding: .45rem .6rem; border-bottom: 1px solid var(--line); }
th { font-weight: 600; } td p { margin: 0 0 .4rem; } td p:last-child { margin: 0; }
/* In a table, code breaks only where it has a space or a hyphen, and the name that heads a row (a
   parameter, a field, a header) not at all: its column is as wide as its longest name. */
td code { overflow-wrap: normal; } td:first-child code { white-space: nowrap; }
/* Narrow screens (a phone is about 390 px wide): each table row becomes a card, the name as its
   title and every other cell after its column's heading, so nothing scrolls sideways. */
@media (max-width: 40rem) {
  header { padding: 1.25rem 1rem .75rem; } nav { padding: 1rem; } main { padding: 0 1rem 3rem; }
  .table table, .table tbody, .table tr, .table td { display: block; width: 100%; }
  .table thead { position: absolute; left: -9999px; }
  .table tr { border: 1px solid var(--line); border-radius: 6px; margin-bottom: .6rem; padding: .4rem .7rem; }
  .table td { border: none; padding: .1rem 0; }
  .table td:first-child { font-weight: 600; }
  .table td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); font-weight: 600; }
  td code { white-space: normal; overflow-wrap: anywhere; }
}
`;

/** What the page lists, in the order it lists it: the document's operations by tag (the webhooks
 * apart), the webhooks, and the named schemas that are objects and those that are enums. */
function contentsOf(document: OpenApiDocument) {
  const tags = document.tags.filter((tag) => tag.name !== 'Webhooks');
  const byTag = tags.map((tag) => ({
    tag,
    operations: Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => op.tags.includes(tag.name))
        .map(([method, op]) => ({ method, path, op })),
    ),
  }));
  const webhooks = Object.values(document.webhooks).flatMap((item) =>
    Object.entries(item).map(([method, op]) => ({ method, op })),
  );
  const objectSchemas = Object.entries(document.components.schemas).filter(
    ([, schema]) => schema.type === 'object',
  );
  const enumSchemas = Object.entries(document.components.schemas).filter(([, schema]) =>
    Array.isArray(schema.enum),
  );
  return { byTag, webhooks, objectSchemas, enumSchemas };
}

type Contents = ReturnType<typeof contentsOf>;

function renderNav({ byTag, webhooks, objectSchemas, enumSchemas }: Contents): string {
  return `<nav aria-label="Contents"><ul>
<li><a href="#introduction">Introduction</a></li>
<li><a href="#headers">Response headers</a></li>
${byTag
  .map(
    ({ tag, operations }) => `<li><a href="#${anchor('tag', tag.name)}">${escapeHtml(tag.name)}</a><ul>
${operations.map(({ op }) => `<li><a href="#${anchor('op', op.operationId)}">${escapeHtml(op.summary)}</a></li>`).join('\n')}
</ul></li>`,
  )
  .join('\n')}
<li><a href="#webhooks">Webhooks</a><ul>
${webhooks.map(({ op }) => `<li><a href="#${anchor('webhook', op.operationId)}">${escapeHtml(op.summary)}</a></li>`).join('\n')}
<li><a href="#event-types">Event types</a></li>
</ul></li>
<li><a href="#objects">Objects</a><ul>
${[...objectSchemas, ...enumSchemas].map(([name]) => `<li><a href="#${anchor('schema', name)}">${escapeHtml(name)}</a></li>`).join('\n')}
</ul></li>
</ul></nav>`;
}

function renderOperations(document: OpenApiDocument, { byTag }: Contents): string {
  return byTag
    .map(
      ({ tag, operations }) => `<section aria-labelledby="${anchor('tag', tag.name)}">
<h2 id="${anchor('tag', tag.name)}">${escapeHtml(tag.name)}</h2>
${prose(tag.description)}
${operations.map(({ method, path, op }) => renderOperation(document, method, path, op)).join('\n')}
</section>`,
    )
    .join('\n');
}

function renderWebhooks(document: OpenApiDocument, { webhooks }: Contents): string {
  const webhookTag = document.tags.find((tag) => tag.name === 'Webhooks');
  return `<section aria-labelledby="webhooks">
<h2 id="webhooks">Webhooks</h2>
${webhookTag ? prose(webhookTag.description) : ''}
${webhooks.map(({ method, op }) => renderOperation(document, method, 'to the HTTPS URL of every subscribed webhook', op, true)).join('\n')}
<h3 id="event-types">Event types</h3>
<p>Grouped types are sent once the object has had no change for one minute, and at the latest five minutes after the first change; the others at once.</p>
${table(
  'Event types',
  ['Type', 'Object', 'Timing', 'Emitted when'],
  EVENT_TYPE_NAMES.map((type) => [
    `<code>${escapeHtml(type)}</code>`,
    `<code>${escapeHtml(EVENT_TYPES[type].object)}</code>`,
    EVENT_TYPES[type].grouped ? 'grouped' : 'at once',
    inline(EVENT_TYPES[type].when),
  ]),
)}
</section>`;
}

function renderObjects({ objectSchemas, enumSchemas }: Contents): string {
  return `<section aria-labelledby="objects">
<h2 id="objects">Objects</h2>
${objectSchemas
  .map(
    ([
      name,
      schema,
    ]) => `<section id="${anchor('schema', name)}" aria-labelledby="${anchor('schema', name)}-title">
<h3 id="${anchor('schema', name)}-title">${escapeHtml(name)}</h3>
${prose(String(schema.description ?? ''))}
${table(`Fields of ${name}`, ['Field', 'Type', 'Description'], fieldRows(schema))}
</section>`,
  )
  .join('\n')}
${enumSchemas
  .map(
    ([
      name,
      schema,
    ]) => `<section id="${anchor('schema', name)}" aria-labelledby="${anchor('schema', name)}-title">
<h3 id="${anchor('schema', name)}-title">${escapeHtml(name)}</h3>
${prose(String(schema.description ?? ''))}
<p>${describeSchema(schema)}</p>
</section>`,
  )
  .join('\n')}
</section>`;
}

/** The reference page of the API: a complete HTML document. */
export function renderReferencePage(document: OpenApiDocument = openapiDocument): string {
  const contents = contentsOf(document);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(document.info.title)} reference</title>
<link rel="icon" href="data:image/svg+xml,${encodeURIComponent(ICON_SVG)}">
<style>${STYLE}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<h1>${escapeHtml(document.info.title)}</h1>
<p>Version ${escapeHtml(document.info.version)} · OpenAPI ${escapeHtml(document.openapi)} · ${inline(document.info.summary)}</p>
</header>
<div class="layout">
${renderNav(contents)}
<main id="main">
<section aria-labelledby="introduction">
<h2 id="introduction">Introduction</h2>
${prose(document.info.description)}
</section>
<section aria-labelledby="headers">
<h2 id="headers">Response headers</h2>
${renderHeaders(document)}
</section>
${renderOperations(document, contents)}
${renderWebhooks(document, contents)}
${renderObjects(contents)}
</main>
</div>
</body>
</html>
`;
}
