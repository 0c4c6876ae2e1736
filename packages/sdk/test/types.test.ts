import { readFileSync } from 'node:fs';
import { generateTypes } from '../scripts/openapi-to-ts.ts';

// Issue 25, item 3: the SDK's resource and event types come from packages/contracts' OpenAPI
// document. This fails when src/openapi-types.ts is not what the document gives today; then run
// `pnpm --filter @trips/sdk generate` and let tsc show what the change breaks.

const document = JSON.parse(readFileSync(new URL('../../contracts/openapi.json', import.meta.url), 'utf8'));
const committed = readFileSync(new URL('../src/openapi-types.ts', import.meta.url), 'utf8');

test('src/openapi-types.ts is what openapi.json gives', () => {
  expect(committed).toBe(generateTypes(document));
});

test('a change to the document changes the types, and a schema it cannot express is refused', () => {
  const changed = structuredClone(document);
  changed.components.schemas.Trip.properties.title.type = 'integer';
  expect(generateTypes(changed)).toContain('  title: number;');
  changed.components.schemas.EventType.enum.push('trip.archived');
  expect(() => generateTypes(changed)).toThrow(/no related object type for trip.archived/);
  const odd = structuredClone(document);
  odd.components.schemas.Trip.properties.title.type = 'tuple';
  expect(() => generateTypes(odd)).toThrow(/cannot express type tuple/);
});
