// Every metric the alert rules and the dashboard query (k8s/components/monitoring) is one the running
// services export: the api, the recorder and the dispatcher as processes, as their images run
// them, scraped at /metrics after one API request and one event delivered, once after a failure.
// A name the services do not export would make an alert that can never fire, or an empty panel.
import { createWebhook } from '@trips/db/webhooks';
import { startReceiver, waitFor, type TestReceiver } from '@trips/testkit';
import { freePort } from '../system/cluster.ts';
import { insertTrip, startStack, type Stack } from '../sdk/stack.ts';
import { dashboard, exportedNames, expressions, metricNames, missingMetrics } from './sources.ts';

let stack: Stack;
let receiver: TestReceiver | undefined;
let apiMetricsPort: number;

beforeAll(async () => {
  apiMetricsPort = await freePort();
  stack = await startStack({ dispatcher: true, apiEnv: { API_METRICS_PORT: String(apiMetricsPort) } });
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

const scrape = async (url: string) => {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
};

/** Each service's /metrics, once the journey has happened. */
async function scrapeAll(): Promise<string[]> {
  const healthMetrics = stack.replicas
    .filter((r) => r.service !== 'api')
    .map((r) => r.readyUrl.replace('/readyz', '/metrics'));
  return Promise.all([`http://127.0.0.1:${apiMetricsPort}/metrics`, ...healthMetrics].map(scrape));
}

test('the rules and the dashboard query only metrics the services export', async () => {
  const { agencyId, key } = await stack.agency();
  receiver = await startReceiver(stack.ca!);
  // The first attempt fails, the retry (after 1 s here) succeeds: both kinds of delivery are seen.
  let answered = 0;
  receiver.answer = () => ({ status: answered++ === 0 ? 503 : 200 });
  await createWebhook(stack.db, { agencyId, url: receiver.url, eventTypes: ['trip.created'] });
  const trips = await fetch(`${stack.apiUrl}/api/v1/trips`, { headers: { authorization: `Bearer ${key}` } });
  expect(trips.status).toBe(200);
  await insertTrip(stack.db, agencyId);
  await waitFor(() => answered >= 2, {
    what: 'a failed first attempt and a delivered retry',
    timeoutMs: 20_000,
  });

  const exported = new Set<string>();
  const expositions = await waitFor(
    async () => {
      const texts = await scrapeAll();
      // The dispatcher counts the outcome once the attempt is recorded, just after the 2xx.
      const retried = /^trips_event_record_to_delivery_seconds_count\{.*attempt="retry"/m;
      return texts.some((t) => retried.test(t)) && texts;
    },
    { what: 'the delivery in the dispatcher’s /metrics' },
  );
  for (const text of expositions) for (const name of exportedNames(text)) exported.add(name);

  const exprs = expressions();
  expect(exprs.length).toBeGreaterThan(30);
  expect(missingMetrics(exprs, exported)).toEqual([]);

  // The check itself: a dashboard panel naming a metric nobody exports is caught, by name and place.
  const broken = dashboard();
  broken.panels.push({
    title: 'Typo',
    targets: [
      {
        expr: 'sum(rate(trips_deliveries_totl{outcome="delivered"}[5m])) / sum(rate(trips_deliveries_total[5m]))',
      },
    ],
  });
  expect(missingMetrics(expressions(broken), exported)).toEqual(['panel "Typo": trips_deliveries_totl']);
}, 60_000);

test.each([
  [
    'functions, aggregations and label lists are no metric names',
    'sum by (le, route) (rate(a_bucket{route=~"/api/.*"}[5m]))',
    ['a_bucket'],
  ],
  [
    'strings, regexes and label_replace arguments are not either',
    'label_replace(max(b) > 1 and on (queue) max(c_total{x="d_e or f"}), "queue", "events", "", "")',
    ['b', 'c_total'],
  ],
  [
    'offsets, subqueries, numbers and keywords',
    'sum(increase(d[1w] offset 1h)) > 3 * max_over_time(e[15m:1m]) or vector(0) unless f bool == 1e3',
    ['d', 'e', 'f'],
  ],
  ['a bare name and a name with a colon', 'job:requests:rate5m / g', ['job:requests:rate5m', 'g']],
  ['a Grafana variable in a range', 'sum(rate(h_count[$__rate_interval])) without (pod)', ['h_count']],
])('metric names in PromQL: %s', (_what, expr, names) => {
  expect(metricNames(expr).sort()).toEqual([...names].sort());
});
