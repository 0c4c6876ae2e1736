// scripts/start.sh checks the ports the services will take before it starts them, so it falls back
// to their defaults itself; those must be the settings table's.
import { SETTINGS } from '@trips/runtime';
import { readText } from '../deploy/helpers.ts';

const ports = ['PORT', 'API_METRICS_PORT', 'RECORDER_HEALTH_PORT', 'DISPATCHER_HEALTH_PORT'] as const;

test.each(ports)("start.sh's fallback for %s is the table's default", (name) => {
  const fallbacks = [...readText('scripts/start.sh').matchAll(new RegExp(`\\$\\{${name}:-(\\d+)\\}`, 'g'))];
  expect(fallbacks.length).toBeGreaterThan(0);
  for (const [, port] of fallbacks) expect(Number(port)).toBe(SETTINGS[name].default);
});
