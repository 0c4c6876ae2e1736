import { sql } from 'kysely';
import { Migrator, NO_MIGRATIONS } from 'kysely/migration';
import { migrations, migrateToLatest } from '@trips/db';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const migrator = () => new Migrator({ db: t.db, provider: { getMigrations: async () => migrations } });
const captureSource = async () =>
  (
    await sql<{ src: string }>`SELECT prosrc AS src FROM pg_proc WHERE proname = 'capture_change'`.execute(
      t.db,
    )
  ).rows[0]?.src;

test("0009's down puts 0003's capture back, and up again replaces it", async () => {
  const latest = await captureSource();
  expect(latest).toContain('old_template');
  const { error } = await migrator().migrateTo('0008_template_flip_touches');
  expect(error).toBeUndefined();
  const restored = await captureSource();
  expect(restored).toContain('parent_template');
  expect(restored).not.toContain('old_template');
  await migrateToLatest(t.db);
  expect(await captureSource()).toBe(latest);
});

test('every migration can be undone down to an empty schema, and done again', async () => {
  const down = await migrator().migrateTo(NO_MIGRATIONS);
  expect(down.error).toBeUndefined();
  expect(await captureSource()).toBeUndefined();
  expect(await migrateToLatest(t.db)).toEqual(Object.keys(migrations));
});
