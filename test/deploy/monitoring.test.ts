// k8s/components/monitoring, which an overlay takes only when its cluster runs the Prometheus
// Operator: as committed no overlay has it, so each applies on a cluster without that operator;
// with its commented-out components: lines switched on (docs/operations.md, "Before you deploy"),
// each has the PrometheusRule valid against the Prometheus Operator's CRD (vendored, k8s/crds/)
// and as committed, in the overlay's namespace, and the Grafana dashboard's ConfigMap holding the
// committed JSON under the label Grafana's sidecar looks for. What the rules do is promtool's
// (test/monitoring/alerts.test.ts); that they query only exported metrics, exported.test.ts's.
import { parse } from 'yaml';
import { readJson, readText } from './helpers.ts';
import { render, renderOptedIn, schemaProblems, type Obj } from './k8s-checks.ts';

const committedRule = parse(readText('k8s/components/monitoring/prometheus-rule.yaml'));
const committedDashboard = readJson('k8s/components/monitoring/dashboard.json');

describe.each([
  ['dev', 'trips-dev'],
  ['prod', 'trips'],
  ['prod-engines', 'trips'],
])('k8s/overlays/%s', (overlay, namespace) => {
  test('as committed: nothing of the Prometheus Operator, so it applies on a cluster without one', () => {
    const objects = render(`k8s/overlays/${overlay}`);
    const monitoring = objects.filter(
      (o) =>
        o.apiVersion.startsWith('monitoring.coreos.com/') ||
        o.metadata.labels?.['app.kubernetes.io/component'] === 'monitoring',
    );
    expect(monitoring.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([]);
  });

  describe('with components/monitoring switched on as the overlay says', () => {
    const { objects, offeredBy } = renderOptedIn(`k8s/overlays/${overlay}`, 'monitoring');

    test('dev and prod offer it; prod-engines takes it from prod', () => {
      expect(offeredBy.sort()).toEqual(['dev', 'prod']);
    });

    test('has the PrometheusRule as committed, valid against its CRD, in the overlay’s namespace', async () => {
      const rules = objects.filter((o) => o.kind === 'PrometheusRule');
      expect(rules.map((r) => [r.metadata.name, r.metadata.namespace])).toEqual([
        ['trips-alerts', namespace],
      ]);
      expect(await schemaProblems(rules[0])).toEqual([]);
      expect(rules[0].spec).toEqual(committedRule.spec);
    });

    test('has the dashboard in a ConfigMap that Grafana’s sidecar picks up', () => {
      const maps = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard);
      expect(
        maps.map((m) => [m.metadata.name, m.metadata.namespace, m.metadata.labels.grafana_dashboard]),
      ).toEqual([['trips-dashboard', namespace, '1']]);
      expect(Object.keys(maps[0].data)).toEqual(['trips-journey.json']);
      expect(JSON.parse(maps[0].data['trips-journey.json'])).toEqual(committedDashboard);
    });
  });
});

test('the dashboard: unique panel ids, and every query on the chosen Prometheus data source', () => {
  const panels: any[] = committedDashboard.panels;
  const ids = panels.map((p) => p.id);
  expect(new Set(ids).size).toBe(ids.length);
  const queries = panels.flatMap((p) => p.targets ?? []);
  expect(queries.length).toBeGreaterThan(20);
  for (const q of queries) expect([q.expr, q.datasource?.uid]).toEqual([q.expr, '${datasource}']);
  expect(committedDashboard.templating.list.map((v: any) => [v.name, v.type, v.query])).toEqual([
    ['datasource', 'datasource', 'prometheus'],
  ]);
});

describe('the CRD schema refuses a broken PrometheusRule', () => {
  const { objects } = renderOptedIn('k8s/overlays/prod', 'monitoring');
  const rule = (): Obj => structuredClone(objects.find((o) => o.kind === 'PrometheusRule'));

  test.each([
    [
      'a group without a name',
      (r: Obj) => delete r.spec.groups[0].name,
      /groups\/0 must have required property 'name'/,
    ],
    [
      'a rule without an expression',
      (r: Obj) => delete r.spec.groups[0].rules[0].expr,
      /must have required property 'expr'/,
    ],
    [
      '`for` that is not a duration',
      (r: Obj) => (r.spec.groups[0].rules[0].for = 'five minutes'),
      /rules\/0\/for must match pattern/,
    ],
    [
      'an annotation that is not text',
      (r: Obj) => (r.spec.groups[0].rules[0].annotations.summary = 3),
      /annotations\/summary must be string/,
    ],
  ])('%s', async (_what, breakIt, message) => {
    const broken = rule();
    breakIt(broken);
    expect((await schemaProblems(broken)).join('\n')).toMatch(message);
  });
});
