import { sql } from 'kysely';
import { countSignInAttempt } from '@trips/db/sign-in-failures';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const WINDOW_MS = 60_000;
const keys = async () =>
  (await t.db.selectFrom('sign_in_failures').select('key').orderBy('key').execute()).map((r) => r.key);

test('counting an attempt removes every key whose window has passed, so guessed e-mails do not pile up', async () => {
  await countSignInAttempt(t.db, ['email:a@x.example', 'address:10.0.0.1'], WINDOW_MS);
  await countSignInAttempt(t.db, ['email:b@x.example', 'address:10.0.0.1'], WINDOW_MS);
  // Two of them age past the window.
  await sql`UPDATE sign_in_failures SET window_started_at = now() - interval '2 minutes'
             WHERE key IN ('email:a@x.example', 'address:10.0.0.1')`.execute(t.db);

  const counts = await countSignInAttempt(t.db, ['email:c@x.example', 'address:10.0.0.1'], WINDOW_MS);
  expect(await keys()).toEqual(['address:10.0.0.1', 'email:b@x.example', 'email:c@x.example']);
  // The address' old window is gone: it counts from 1 again.
  expect(counts.get('address:10.0.0.1')!.failures).toBe(1);
  expect(counts.get('email:c@x.example')!.failures).toBe(1);
});

test('within its window a key keeps counting', async () => {
  for (let i = 0; i < 3; i++) await countSignInAttempt(t.db, ['email:d@x.example'], WINDOW_MS);
  const counts = await countSignInAttempt(t.db, ['email:d@x.example'], WINDOW_MS);
  expect(counts.get('email:d@x.example')!.failures).toBe(4);
});
