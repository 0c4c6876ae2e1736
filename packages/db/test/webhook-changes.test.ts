import { sql } from 'kysely';
import { createTestDatabase, waitFor, type TestDatabase } from '@trips/testkit';
import { createAgency } from '../src/repositories/agencies.ts';
import { recordAttempts } from '../src/repositories/webhook-attempts.ts';
import {
  listenForDeliveryTargetChanges,
  parseDeliveryTargetsChange,
  type DeliveryTargetsChange,
  type DeliveryTargetsListener,
} from '../src/repositories/webhook-changes.ts';
import { rotateWebhookSecretIn } from '../src/repositories/webhook-secrets.ts';
import {
  createWebhook,
  findDeliveryTarget,
  setWebhookEnabled,
  switchOffFailingWebhooks,
  updateWebhookConfig,
  warnFailingWebhooks,
} from '../src/repositories/webhooks.ts';

// Migration 0016's triggers, heard as the dispatcher hears them: which changes are told, naming
// what, and which (the attempts' streak updates, on every delivery batch) are not.

let t: TestDatabase;
let listener: DeliveryTargetsListener;
const heard: DeliveryTargetsChange[] = [];
let lost = 0;

beforeAll(async () => {
  t = await createTestDatabase();
  listener = await listenForDeliveryTargetChanges(
    t.url,
    { onChange: (change) => heard.push(change), onLost: () => lost++ },
    'trips-test-listener',
  );
});
afterAll(async () => {
  await listener?.close();
  await t?.drop();
});

/** What the listener hears of `change`, once it committed: waits for `expected` changes. */
async function heardOf(change: () => Promise<unknown>, expected: number): Promise<DeliveryTargetsChange[]> {
  const from = heard.length;
  await change();
  await waitFor(() => heard.length - from >= expected, { what: `${expected} notifications` });
  // Anything more would have come with the commit that was just heard.
  await sql`SELECT 1`.execute(t.db);
  return heard.slice(from);
}

/** A webhook of the agency, its creation heard. */
async function created(agencyId: string) {
  let made: Awaited<ReturnType<typeof createWebhook>> | undefined;
  await heardOf(async () => {
    made = await createWebhook(t.db, { agencyId, url: 'https://a.example/h', eventTypes: ['trip.created'] });
  }, 1);
  return made!;
}

test('every change of what a delivery target read sees names the webhook and its agency; streak updates say nothing', async () => {
  const agency = await createAgency(t.db, { name: 'Heard' });
  const whk = (webhookId: string) => ({ agencyId: agency.id, webhookId });
  let id = '';
  expect(
    await heardOf(async () => {
      id = (
        await createWebhook(t.db, {
          agencyId: agency.id,
          url: 'https://a.example/h',
          eventTypes: ['trip.created'],
        })
      ).webhook.id;
    }, 1),
  ).toEqual([whk(id)]); // the webhook and its first secret, folded into one notification

  expect(await heardOf(() => updateWebhookConfig(t.db, id, { url: 'https://b.example/h' }), 1)).toEqual([
    whk(id),
  ]);
  expect(await heardOf(() => updateWebhookConfig(t.db, id, { eventTypes: ['payment.paid'] }), 1)).toEqual([
    whk(id),
  ]);
  expect(
    await heardOf(() => t.db.transaction().execute((trx) => rotateWebhookSecretIn(trx, id, 60_000)), 1),
  ).toEqual([whk(id)]);
  expect(await heardOf(() => setWebhookEnabled(t.db, id, false), 1)).toEqual([whk(id)]);
  expect(await heardOf(() => setWebhookEnabled(t.db, id, true), 1)).toEqual([whk(id)]);

  // The attempts' streak, the warning and the description change nothing a delivery reads.
  const quiet = heard.length;
  await recordAttempts(t.db, [
    {
      webhookId: id,
      eventId: 'evt_1',
      eventType: 'payment.paid',
      attempt: 1,
      attemptedAt: new Date(),
      durationMs: 3,
      statusCode: 500,
      error: 'http_status',
      responseBody: null,
    },
  ]);
  await sql`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = ${id}`.execute(t.db);
  await t.db.transaction().execute((trx) => warnFailingWebhooks(trx, 1_000));
  await updateWebhookConfig(t.db, id, { description: 'only words' });
  await sql`UPDATE webhooks SET url = url WHERE id = ${id}`.execute(t.db);
  // The switch-off policy does change it: off, with a new epoch.
  expect(
    await heardOf(() => t.db.transaction().execute((trx) => switchOffFailingWebhooks(trx, 1_000)), 1),
  ).toEqual([whk(id)]);
  expect(heard.length - quiet).toBe(1);

  expect(
    await heardOf(() => sql`UPDATE webhooks SET epoch = epoch + 1 WHERE id = ${id}`.execute(t.db), 1),
  ).toEqual([whk(id)]);
  expect(
    await heardOf(() => sql`DELETE FROM webhook_secrets WHERE webhook_id = ${id}`.execute(t.db), 1),
  ).toEqual([whk(id)]);
  await heardOf(
    () =>
      sql`INSERT INTO webhook_secrets (webhook_id, secret) VALUES (${id}, ${'whsec_' + 'x'.repeat(43)})`.execute(
        t.db,
      ),
    1,
  );
  // Deleted: its secrets go by cascade, after the row, so theirs names no agency; the row's does.
  const deleted = await heardOf(() => t.db.deleteFrom('webhooks').where('id', '=', id).execute(), 2);
  expect(deleted).toEqual(expect.arrayContaining([whk(id), { agencyId: null, webhookId: id }]));
});

test('a webhook moved to another agency names both; deleting an agency names each of its webhooks', async () => {
  const from = await createAgency(t.db, { name: 'From' });
  const to = await createAgency(t.db, { name: 'To' });
  const { webhook } = await created(from.id);
  const moved = await heardOf(
    () => sql`UPDATE webhooks SET agency_id = ${to.id} WHERE id = ${webhook.id}`.execute(t.db),
    2,
  );
  expect(moved).toEqual(
    expect.arrayContaining([
      { agencyId: from.id, webhookId: webhook.id },
      { agencyId: to.id, webhookId: webhook.id },
    ]),
  );
  const gone = await heardOf(() => t.db.deleteFrom('agencies').where('id', '=', to.id).execute(), 1);
  expect(gone).toContainEqual({ agencyId: to.id, webhookId: webhook.id });
});

test('TRUNCATE names everything; the read tells how long each secret signs', async () => {
  const agency = await createAgency(t.db, { name: 'Truncated' });
  const { webhook } = await created(agency.id);
  // Each change heard before the next, so what the TRUNCATE tells comes alone.
  await heardOf(() => t.db.transaction().execute((trx) => rotateWebhookSecretIn(trx, webhook.id, 60_000)), 1);
  const read = (await findDeliveryTarget(t.db, webhook.id))!;
  expect(read.secrets).toHaveLength(2);
  expect(read.secrets_expire_in_ms[0]).toBeNull(); // the new one, first
  expect(read.secrets_expire_in_ms[1]).toBeGreaterThan(55_000);
  expect(read.secrets_expire_in_ms[1]).toBeLessThanOrEqual(60_000);

  expect(await heardOf(() => sql`TRUNCATE webhook_secrets`.execute(t.db), 1)).toEqual(['all']);
  expect(await heardOf(() => sql`TRUNCATE webhooks CASCADE`.execute(t.db), 1)).toContain('all');
});

test('a payload it cannot read counts as everything', () => {
  expect(parseDeliveryTargetsChange('{"agency": "agy_1", "webhook": "whk_1"}')).toEqual({
    agencyId: 'agy_1',
    webhookId: 'whk_1',
  });
  expect(parseDeliveryTargetsChange('{"agency": null, "webhook": "whk_1"}')).toEqual({
    agencyId: null,
    webhookId: 'whk_1',
  });
  for (const payload of ['*', 'whk_1', '{"agency": "agy_1"}', '', undefined])
    expect(parseDeliveryTargetsChange(payload)).toBe('all');
});

test('its backend terminated, the listener says it is lost, once', async () => {
  const other: DeliveryTargetsChange[] = [];
  let lostHere = 0;
  const second = await listenForDeliveryTargetChanges(
    t.url,
    { onChange: (change) => other.push(change), onLost: () => lostHere++ },
    'trips-test-listener-2',
  );
  try {
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE application_name = 'trips-test-listener-2' AND datname = current_database()`.execute(
      t.db,
    );
    await waitFor(() => lostHere === 1, { what: 'the listener to say it is lost' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lostHere).toBe(1);
  } finally {
    await second.close();
  }
  expect(lost).toBe(0); // the first listener is untouched
});
