// The docs' configuration tables, written from the settings table (@trips/runtime's
// settings-table/) between `<!-- settings:begin -->` and `<!-- settings:end -->`: docs/operations.md
// has every setting, README.md the ones decisions.md D9 names. `pnpm docs:settings` writes them;
// test/config/docs.test.ts fails when the committed files differ.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import { SETTING_SECTIONS, SETTINGS, type Setting, type SettingName } from '@trips/runtime';

const BEGIN = '<!-- settings:begin -->';
const END = '<!-- settings:end -->';

/** What each section's table is headed with in docs/operations.md. */
const SECTION_INTROS: Record<keyof typeof SETTING_SECTIONS, string> = {
  shared: 'Read by more than one process; all but `LOG_LEVEL` must agree among them:',
  api: 'api:',
  recorder: 'recorder (docs/events.md):',
  dispatcher: 'dispatcher (docs/webhooks.md):',
  tracing:
    'Tracing, all three services: the standard OpenTelemetry variables ([Tracing](#tracing)), off unless ' +
    'an endpoint is set; commented examples in `k8s/base/settings.env`. The exporter also honours the ' +
    'other standard `OTEL_EXPORTER_OTLP_*` (timeout, certificates, compression):',
};

/** decisions.md D9's settings, in its order: the public contract README.md shows. */
const D9: readonly SettingName[] = [
  'DATABASE_URL',
  'AMQP_URL',
  'SMTP_URL',
  'PORT',
  'WEBHOOK_RETRY_DELAYS',
  'WEBHOOK_FAILURE_WINDOW',
  'WEBHOOK_TIMEOUT',
  'EVENT_GROUP_QUIET',
  'EVENT_GROUP_MAX',
  'EVENT_RETENTION',
  'RATE_LIMIT_PER_SECOND',
  'RATE_LIMIT_BURST',
  'WEBHOOK_ALLOW_PRIVATE_NETWORKS',
  'WEBHOOK_CA_FILE',
];

/** The files that hold a generated region, and what goes in it. */
const TARGETS: Record<string, () => string> = {
  'docs/operations.md': () =>
    Object.entries(SETTING_SECTIONS)
      .map(([section, rows]) =>
        [
          SECTION_INTROS[section as keyof typeof SETTING_SECTIONS],
          table(['name', 'default', 'value', 'read by', 'meaning'], Object.entries(rows), (row) => [
            defaultOf(row),
            valueOf(row),
            row.readers.join(', '),
            row.meaning,
          ]),
        ].join('\n\n'),
      )
      .join('\n\n'),
  'README.md': () =>
    table(
      ['name', 'default', 'meaning'],
      D9.map((name) => [name, SETTINGS[name]]),
      (row) => [defaultOf(row), row.meaning],
    ),
};

function table(headings: string[], rows: [string, Setting][], cells: (row: Setting) => string[]): string {
  const line = (values: string[]) => `| ${values.map((v) => v.replaceAll('|', '\\|')).join(' | ')} |`;
  return [
    line(headings),
    line(headings.map(() => '---')),
    ...rows.map(([name, row]) => line([`\`${name}\``, ...cells(row)])),
  ].join('\n');
}

function defaultOf(row: Setting): string {
  if (row.defaultText) return row.defaultText;
  if (!('default' in row) || row.default === undefined) return 'none';
  return row.default === '' ? 'empty' : `\`${row.default}\``;
}

/** What a value must be, as its rule checks it. */
function valueOf(row: Setting): string {
  const described = describe(row);
  return row.secret ? `${described}; a secret` : described;
}

function describe(row: Setting): string {
  const either = (values: readonly string[]) =>
    values.length === 1
      ? `\`${values[0]}\``
      : `${values
          .slice(0, -1)
          .map((v) => `\`${v}\``)
          .join(', ')} or \`${values.at(-1)}\``;
  switch (row.kind) {
    case 'text':
      return 'text';
    case 'choice':
      return either(row.choices);
    case 'url':
      return `${either(row.protocols)} URL`;
    case 'urls':
      return `${either(row.protocols)} URLs, comma-separated`;
    case 'int':
      return row.max === undefined
        ? `whole number, at least ${count(row.min)}`
        : `whole number, ${count(row.min)}–${count(row.max)}`;
    case 'number':
      return `number, ${row.min}–${row.max}`;
    case 'bool':
      return '`true` or `false`';
    case 'duration':
      return row.allowZero ? 'duration, 0 allowed' : 'duration';
    case 'durations':
      return 'durations, comma-separated';
    case 'external':
      return "OpenTelemetry's";
  }
}

/** 10000 → '10 000', as the docs write counts. */
const count = (n: number) => n.toLocaleString('en-US').replaceAll(',', ' ');

/** `text` with its settings region replaced by `region`; throws when the markers are missing. */
function replaceRegion(path: string, text: string, region: string): string {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${path} has no ${BEGIN} … ${END} region`);
  return `${text.slice(0, begin + BEGIN.length)}\n\n${region}\n\n${text.slice(end)}`;
}

/** Each file with a settings region: as committed, and as the settings table writes it. */
export async function settingsDocs(
  root: string,
): Promise<{ path: string; current: string; wanted: string }[]> {
  return Promise.all(
    Object.entries(TARGETS).map(async ([path, render]) => {
      const file = join(root, path);
      const current = readFileSync(file, 'utf8');
      const options = await prettier.resolveConfig(file);
      const wanted = await prettier.format(replaceRegion(path, current, render()), {
        ...options,
        filepath: file,
      });
      return { path, current, wanted };
    }),
  );
}
