// docs/operations.md opens with what to change before deploying (issue 40): the first section, on
// its first screen, naming every example host the prod overlays would otherwise deploy and each
// setting and object a platform team must make its own. An example.com value added to the
// manifests without a line there fails here.
import { readText } from './helpers.ts';
import { render } from './k8s-checks.ts';

const lines = readText('docs/operations.md').split('\n');
const start = lines.indexOf('## Before you deploy');
const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
const checklist = lines.slice(start, end).join('\n');

test('it is the first section, and ends within the first screen', () => {
  expect(start).toBeGreaterThan(0);
  expect(lines.slice(0, start).filter((line) => line.startsWith('## '))).toEqual([]);
  expect(end).toBeLessThan(50);
});

test.each(['prod', 'prod-engines'])('it names every example host overlays/%s renders', (overlay) => {
  const rendered = JSON.stringify(render(`k8s/overlays/${overlay}`));
  const hosts = [...new Set(rendered.match(/(?:[a-z0-9-]+\.)+example\.com/g))];
  expect(hosts.length).toBeGreaterThanOrEqual(3);
  expect(hosts.filter((host) => !checklist.includes(host))).toEqual([]);
});

test('it names the settings, the Secrets and the optional component to make one’s own', () => {
  for (const name of [
    'SETTINGS_URL',
    'MAIL_FROM',
    'API_TRUST_PROXY',
    'SMTP_URL',
    'trips-secrets',
    'trips-api-tls',
    'PrometheusRule',
    'components/monitoring',
  ]) {
    expect([name, checklist.includes(name)]).toEqual([name, true]);
  }
});
