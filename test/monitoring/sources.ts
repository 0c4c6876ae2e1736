// What the alert rules and the dashboard ask Prometheus for (k8s/components/monitoring), and the metric names
// their PromQL expressions reference, for the checks that those names are what the services export.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The PrometheusRule object as committed. */
export const prometheusRule = () =>
  parse(read('k8s/components/monitoring/prometheus-rule.yaml')) as {
    spec: { groups: { name: string; rules: AlertRule[] }[] };
  };

export const alertRules = (rule = prometheusRule()) => rule.spec.groups.flatMap((g) => g.rules);

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** The Grafana dashboard as committed (the ConfigMap's one file). */
export const dashboard = () =>
  JSON.parse(read('k8s/components/monitoring/dashboard.json')) as { panels: Panel[] };

/** Every PromQL expression of the rules and the dashboard, with where it is. */
export function expressions(d = dashboard(), rule = prometheusRule()): { where: string; expr: string }[] {
  const panels = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...panels(p.panels ?? [])]);
  return [
    ...alertRules(rule).map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
    ...panels(d.panels).flatMap((p) =>
      (p.targets ?? []).filter((t) => t.expr).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr! })),
    ),
  ];
}

/** PromQL words that look like names but are not metrics. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects. Not a full parser, but nothing a metric name can be
 * confused with survives the steps: string literals go first (label values, regexes, label_replace's
 * arguments may hold anything), then label matchers `{…}`, range and subquery brackets `[…]`,
 * `offset 1w`, and the label lists of by/without/on/ignoring/group_left/group_right; of the words
 * left, a word followed by `(` is a function or aggregation and the rest are metric names.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\boffset\s+-?[\w.]+/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of bare.matchAll(/(?<![\w.:$])([A-Za-z_:][\w:]*)(\s*\()?/g)) {
    const [, word, call] = match;
    if (!call && !KEYWORDS.has(word!.toLowerCase())) names.add(word!);
  }
  return [...names];
}

/** The series names in a Prometheus text exposition (/metrics), histograms' _bucket, _sum, _count included. */
export function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const name = /^([A-Za-z_:][\w:]*)[{ ]/.exec(line)?.[1];
    if (name) names.add(name);
  }
  return names;
}

/** Each referenced name that no exposition has, with where it is referenced. */
export function missingMetrics(exprs: { where: string; expr: string }[], exported: Set<string>): string[] {
  return exprs.flatMap(({ where, expr }) =>
    metricNames(expr)
      .filter((name) => !exported.has(name))
      .map((name) => `${where}: ${name}`),
  );
}
