// The alert rules of k8s/components/monitoring/prometheus-rule.yaml, checked by Prometheus' own promtool:
// `promtool check rules` (syntax, PromQL, templates) and `promtool test rules` on the series of
// alerts.promtool.yaml, where every alert has series that must make it fire and series that must
// not. Then each rule's runbook link, and naive variants of the rules that those series must catch.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { alertRules, prometheusRule, root } from './sources.ts';

const run = promisify(execFile);
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
/** promtool's unit tests: alerts over minutes and hours, and those that compare with last week. */
const UNIT_TESTS = ['alerts.promtool.yaml', 'weekly.promtool.yaml'];
/** Skipped only where scripts/promtool.sh found no promtool to be had outside CI, and said so. */
const withPromtool = process.env.SKIP_PROMTOOL_TESTS === '1' ? test.skip : test;

interface Outcome {
  ok: boolean;
  output: string;
}

/** Runs promtool on the rule's groups written as a plain rules file beside a copy of the unit tests. */
async function promtool(command: 'check' | 'test', rule = prometheusRule()): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'trips-rules-'));
  try {
    writeFileSync(join(dir, 'rules.yaml'), stringify(rule.spec));
    for (const file of UNIT_TESTS) copyFileSync(join(root, 'test/monitoring', file), join(dir, file));
    const files = command === 'check' ? ['rules.yaml'] : UNIT_TESTS;
    const { stdout, stderr } = await run(PROMTOOL, [command, 'rules', ...files], { cwd: dir });
    return { ok: true, output: stdout + stderr };
  } catch (error: any) {
    if (error.code === 'ENOENT') {
      throw new Error(
        `${PROMTOOL} not found: scripts/promtool.sh installs it (Debian's prometheus package)`,
        {
          cause: error,
        },
      );
    }
    return { ok: false, output: `${error.stdout ?? ''}${error.stderr ?? ''}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

withPromtool('promtool check rules accepts every rule', async () => {
  const { ok, output } = await promtool('check');
  expect(output).toContain(`SUCCESS: ${alertRules().length} rules found`);
  expect(ok).toBe(true);
});

withPromtool(
  'promtool test rules: every alert fires on its series and stays quiet on the others',
  async () => {
    const { ok, output } = await promtool('test');
    console.log(`promtool test rules:\n${output}`);
    expect(output.match(/SUCCESS/g)).toHaveLength(UNIT_TESTS.length);
    expect(ok).toBe(true);
  },
);

test('every alert has series that make it fire and series that must not', () => {
  const cases = UNIT_TESTS.flatMap((file) => {
    const unit = parse(readFileSync(join(root, 'test/monitoring', file), 'utf8')) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    return unit.tests.flatMap((t) => t.alert_rule_test ?? []);
  });
  const covered = (fires: boolean) =>
    new Set(cases.filter((c) => c.exp_alerts.length > 0 === fires).map((c) => c.alertname));
  const names = alertRules().map((r) => r.alert);
  expect(names.filter((n) => !covered(true).has(n))).toEqual([]);
  expect(names.filter((n) => !covered(false).has(n))).toEqual([]);
});

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

test('every alert has a severity, a summary and a runbook link to a section of docs/operations.md', () => {
  const docs = readFileSync(join(root, 'docs/operations.md'), 'utf8');
  const anchors = new Set([...docs.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
  for (const rule of alertRules()) {
    expect([rule.alert, rule.labels?.severity]).toEqual([
      rule.alert,
      expect.stringMatching(/^(critical|warning)$/),
    ]);
    expect([rule.alert, rule.annotations?.summary]).toEqual([rule.alert, expect.any(String)]);
    const [page, section] = (rule.annotations?.runbook_url ?? '').split('#');
    expect([rule.alert, page, anchors.has(section!)]).toEqual([rule.alert, 'docs/operations.md', true]);
  }
});

/** The rule as committed with one alert's expression or `for` changed. */
function variant(alert: string, change: { expr?: (expr: string) => string; for?: string }) {
  const rule = prometheusRule();
  const target = alertRules(rule).find((r) => r.alert === alert)!;
  if (change.expr) target.expr = change.expr(target.expr);
  if (change.for) target.for = change.for;
  return rule;
}

withPromtool.each([
  [
    'delivery lag read from every attempt, retries of a receiver that was down included',
    variant('TripsDeliveryLagHigh', { expr: (e) => e.replace('attempt="first",', '') }),
    /slow retries alone/,
  ],
  [
    'delivery lag read from every event, grouped updates waiting for their group included',
    variant('TripsDeliveryLagHigh', { expr: (e) => e.replace(',grouped="false"', '') }),
    /grouped updates waiting for their group/,
  ],
  [
    'delivery lag read from the recording, blind to what waited before it',
    variant('TripsDeliveryLagHigh', {
      expr: () =>
        'histogram_quantile(0.95, sum by (le) (rate(trips_event_record_to_delivery_seconds_bucket{attempt="first"}[10m]))) > 30',
    }),
    /late before the recording/,
  ],
  [
    'events not published as soon as any wait, though they are being published',
    variant('TripsEventsNotPublished', { expr: () => 'max(trips_events_unpublished) > 0' }),
    /a backlog that is being published/,
  ],
  [
    'a dependency unreachable on the first failed scrape',
    variant('TripsPostgresUnreachable', { for: '0m' }),
    /a short blip of a dependency/,
  ],
  [
    'switch-offs counted without last week to compare with',
    variant('TripsWebhooksSwitchedOffUnusually', {
      expr: () => 'sum(increase(trips_webhooks_switched_off_total[1h])) > 3',
    }),
    /switch-offs at their usual rate/,
  ],
  [
    'any queue depth growing, the bounded events queue and a draining queue included',
    variant('TripsDispatcherQueueGrowing', {
      expr: () => 'max by (queue) (trips_queue_depth) > 1000',
    }),
    /a steady or small backlog/,
  ],
  [
    'API latency over every route, the settings page’s sign-in included',
    variant('TripsApiSlow', { expr: (e) => e.replace('{route=~"/api/.*"}', '') }),
    /a slow settings page/,
  ],
])(
  'promtool test rules fails on a naive rule: %s',
  async (_what, rule, failingCase) => {
    const { ok, output } = await promtool('test', rule);
    expect(ok).toBe(false);
    expect(output).toMatch(failingCase);
  },
  60_000,
);
