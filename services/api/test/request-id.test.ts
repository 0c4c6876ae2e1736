import { newRequestId } from '../src/http/request-id.ts';

test('request ids: req_ and 16 base64url characters, all distinct across many refills of the pool', () => {
  const ids = Array.from({ length: 20_000 }, newRequestId);
  for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
  expect(new Set(ids).size).toBe(ids.length);
  // Random, not a counter: consecutive ids share no long common prefix.
  const shared = ids.slice(1).filter((id, i) => id.slice(0, 8) === ids[i]!.slice(0, 8)).length;
  expect(shared).toBeLessThan(5);
});
