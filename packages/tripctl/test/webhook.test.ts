import { sql } from 'kysely';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson, newAgencyFor, newWebhookFor, STACK_TRACE, type WebhookJson } from './helpers.ts';

let t: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
});
afterAll(() => t.drop());

const SECRET = /^whsec_[A-Za-z0-9_-]{43}$/;
/** A secret as D7 writes it, whole: not the start of its Standard Webhooks form, which also shows. */
const SECRET_ANYWHERE = /whsec_[A-Za-z0-9_-]{43}(?![A-Za-z0-9+/=_-])/g;

const webhookRow = (id: string) =>
  t.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const secretsOf = async (id: string) =>
  (await t.db.selectFrom('webhook_secrets').select('secret').where('webhook_id', '=', id).execute()).map(
    (r) => r.secret,
  );
const webhookCount = async (agencyId: string) =>
  (await t.db.selectFrom('webhooks').select('id').where('agency_id', '=', agencyId).execute()).length;

const newAgency = () => newAgencyFor(env);
const newWebhook = (agencyId: string, ...extra: string[]) => newWebhookFor(env, agencyId, ...extra);

describe('webhook create', () => {
  test('--json prints the webhook and its secret; the row and the secret are stored as printed', async () => {
    const agencyId = await newAgency();
    const out = await newWebhook(agencyId, '--description', 'Booking sync');
    expect(out).toMatchObject({
      id: expect.stringMatching(/^whk_[0-9A-Za-z]+$/),
      agency_id: agencyId,
      url: 'https://hooks.fairway.example/trips',
      events: ['trip.created', 'payment.paid'],
      description: 'Booking sync',
      state: 'active',
      failing_since: null,
      disabled_at: null,
    });
    expect(out.secret).toMatch(SECRET);

    expect(await webhookRow(out.id)).toMatchObject({
      agency_id: agencyId,
      url: 'https://hooks.fairway.example/trips',
      event_types: ['trip.created', 'payment.paid'],
      description: 'Booking sync',
      disabled_at: null,
      failing_since: null,
      epoch: 1,
    });
    expect(await secretsOf(out.id)).toEqual([out.secret]);
  });

  test('the human output shows the secret once and says it will not be shown again', async () => {
    const agencyId = await newAgency();
    const result = await cli(
      [
        'webhook',
        'create',
        '--agency',
        agencyId,
        '--url',
        'https://hooks.fairway.example/a',
        '--events',
        'contact.created',
      ],
      env,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const secrets = result.stdout.match(SECRET_ANYWHERE) ?? [];
    expect(secrets).toHaveLength(1);
    expect(result.stdout).toMatch(/will not be shown again/);
    // And once in the form the Standard Webhooks libraries take: the same bytes in standard base64.
    const standard = /form Standard Webhooks libraries take \(standard base64\):\n(whsec_\S+)\n/.exec(
      result.stdout,
    )?.[1];
    expect(Buffer.from(standard!.slice(6), 'base64')).toEqual(Buffer.from(secrets[0]!.slice(6), 'base64url'));
    const id = /whk_[0-9A-Za-z]+/.exec(result.stdout)?.[0];
    expect(id).toBeDefined();
    expect(result.stdout).toMatch(/state active/);
    expect(result.stdout).toMatch(/events: contact\.created/);
    expect(await secretsOf(id!)).toEqual(secrets);
    expect(() => JSON.parse(result.stdout)).toThrow();
  });

  test('--events all subscribes to every event type; repeated types are stored once', async () => {
    const agencyId = await newAgency();
    const all = await newWebhook(agencyId, '--events', 'all');
    expect((await webhookRow(all.id)).event_types).toEqual(EVENT_TYPE_NAMES);
    const twice = await newWebhook(agencyId, '--events', 'trip.deleted, trip.deleted,payment.paid');
    expect((await webhookRow(twice.id)).event_types).toEqual(['trip.deleted', 'payment.paid']);
  });

  test('the URL is stored as it will be called: scheme and host lower case', async () => {
    const agencyId = await newAgency();
    const out = await newWebhook(agencyId, '--url', 'HTTPS://Hooks.Fairway.Example');
    expect(out.url).toBe('https://hooks.fairway.example/');
    expect((await webhookRow(out.id)).url).toBe('https://hooks.fairway.example/');
  });

  test.each([
    ['an http URL', 'http://hooks.fairway.example/trips', /a webhook URL must be https.*https only/],
    ['a URL that does not parse', 'hooks.fairway.example/trips', /the webhook URL is not a URL/],
    ['an ftp URL', 'ftp://hooks.fairway.example/', /a webhook URL must be https/],
    ['a URL with credentials', 'https://ops:hunter2@hooks.fairway.example/', /must not carry credentials/],
    [
      'an http URL with credentials',
      'http://ops:hunter2@hooks.fairway.example/',
      /must not carry credentials/,
    ],
    ['a URL with a user name only', 'https://ops@hooks.fairway.example/', /must not carry credentials/],
    [
      'a URL over 2048 characters',
      `https://hooks.fairway.example/${'a'.repeat(2048)}`,
      /at most 2048 characters; this one has 2078/,
    ],
  ])('%s is refused (exit 2) and nothing is written', async (_what, url, message) => {
    const agencyId = await newAgency();
    const result = await cli(
      ['webhook', 'create', '--agency', agencyId, '--url', url, '--events', 'trip.created'],
      env,
    );
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/--url/);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(result.stderr).not.toMatch(/hunter2/);
    expect(await webhookCount(agencyId)).toBe(0);
  });

  test('a URL of exactly 2048 characters is accepted', async () => {
    const agencyId = await newAgency();
    const url = `https://hooks.fairway.example/${'a'.repeat(2048 - 30)}`;
    expect(url).toHaveLength(2048);
    const out = await newWebhook(agencyId, '--url', url);
    expect((await webhookRow(out.id)).url).toBe(url);
  });

  test('an unknown event type is refused (exit 2) naming it and listing the known ones', async () => {
    const agencyId = await newAgency();
    const result = await cli(
      [
        'webhook',
        'create',
        '--agency',
        agencyId,
        '--url',
        'https://hooks.fairway.example/',
        '--events',
        'trip.created,trip.exploded',
      ],
      env,
    );
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/unknown event type 'trip\.exploded'; known event types: /);
    expect(result.stderr).not.toMatch(/'trip\.created'/);
    for (const type of EVENT_TYPE_NAMES) expect(result.stderr).toContain(type);
    expect(await webhookCount(agencyId)).toBe(0);
  });

  test('an empty event list is refused (exit 2)', async () => {
    const agencyId = await newAgency();
    const result = await cli(
      ['webhook', 'create', '--agency', agencyId, '--url', 'https://h.example/', '--events', ' , '],
      env,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--events.*at least one event type of trip\.created/);
    expect(await webhookCount(agencyId)).toBe(0);
  });

  test('an unknown agency is an operational failure (exit 1), not a foreign-key error', async () => {
    const result = await cli(
      [
        'webhook',
        'create',
        '--agency',
        'agy_0000000000000000',
        '--url',
        'https://hooks.fairway.example/',
        '--events',
        'trip.created',
      ],
      env,
    );
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no agency agy_0000000000000000.\n' });
    expect(await webhookCount('agy_0000000000000000')).toBe(0);
  });
});

describe('webhook list', () => {
  test("shows each of the agency's webhooks with its state and never a secret", async () => {
    const agencyId = await newAgency();
    const otherAgency = await newAgency();
    const healthy = await newWebhook(agencyId, '--url', 'https://a.example/healthy');
    const failing = await newWebhook(agencyId, '--url', 'https://a.example/failing');
    const switchedOff = await newWebhook(agencyId, '--url', 'https://a.example/off');
    const disabled = await newWebhook(agencyId, '--url', 'https://a.example/disabled');
    const foreign = await newWebhook(otherAgency, '--url', 'https://b.example/');
    const secrets = [healthy, failing, switchedOff, disabled, foreign].map((w) => w.secret!);

    await sql`UPDATE webhooks SET last_success_at = '2030-01-01T00:00:00Z' WHERE id = ${healthy.id}`.execute(
      t.db,
    );
    await sql`UPDATE webhooks SET failing_since = '2030-01-02T00:00:00Z', last_error = 'timeout'
               WHERE id = ${failing.id}`.execute(t.db);
    await sql`UPDATE webhooks SET failing_since = '2030-01-01T00:00:00Z', disabled_at = '2030-01-04T00:00:00Z',
                     disabled_reason = 'failing', last_error = 'http_status'
               WHERE id = ${switchedOff.id}`.execute(t.db);
    await cliJson(['webhook', 'disable', '--id', disabled.id], env);

    const json = await cli(['webhook', 'list', '--agency', agencyId, '--json'], env);
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout) as { agency_id: string; webhooks: WebhookJson[] };
    expect(out.agency_id).toBe(agencyId);
    expect(out.webhooks.map((w) => [w.id, w.state])).toEqual([
      [healthy.id, 'active'],
      [failing.id, 'failing'],
      [switchedOff.id, 'switched_off'],
      [disabled.id, 'disabled'],
    ]);
    expect(out.webhooks[0]).toMatchObject({
      url: 'https://a.example/healthy',
      events: ['trip.created', 'payment.paid'],
      last_success_at: '2030-01-01T00:00:00.000Z',
      failing_since: null,
      last_error: null,
    });
    expect(out.webhooks[1]).toMatchObject({
      failing_since: '2030-01-02T00:00:00.000Z',
      last_error: 'timeout',
    });
    expect(out.webhooks[2]).toMatchObject({
      disabled_at: '2030-01-04T00:00:00.000Z',
      last_error: 'http_status',
    });
    for (const w of out.webhooks) expect(Object.keys(w).filter((k) => /secret/i.test(k))).toEqual([]);

    const human = await cli(['webhook', 'list', '--agency', agencyId], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`${healthy.id}  active  https://a\\.example/healthy`));
    expect(human.stdout).toMatch(new RegExp(`${failing.id}  failing  https://a\\.example/failing`));
    expect(human.stdout).toMatch(new RegExp(`${switchedOff.id}  switched_off  https://a\\.example/off`));
    expect(human.stdout).toMatch(new RegExp(`${disabled.id}  disabled  https://a\\.example/disabled`));
    expect(human.stdout).toMatch(/failing since 2030-01-02 00:00:00 UTC/);
    expect(human.stdout).toMatch(/switched off at 2030-01-04 00:00:00 UTC/);
    expect(human.stdout).toMatch(/last error timeout/);
    expect(human.stdout).toMatch(/events: trip\.created, payment\.paid/);
    expect(human.stdout).not.toContain(foreign.id);
    expect(json.stdout).not.toContain(foreign.id);

    for (const secret of secrets) {
      expect(secret).toMatch(SECRET);
      expect(json.stdout).not.toContain(secret);
      expect(human.stdout).not.toContain(secret);
    }
    expect(json.stdout).not.toMatch(SECRET_ANYWHERE);
    expect(human.stdout).not.toMatch(SECRET_ANYWHERE);
  });

  test('an agency without webhooks lists none', async () => {
    const agencyId = await newAgency();
    expect(await cliJson(['webhook', 'list', '--agency', agencyId], env)).toEqual({
      agency_id: agencyId,
      webhooks: [],
    });
    const human = await cli(['webhook', 'list', '--agency', agencyId], env);
    expect(human.stdout).toMatch(/has no webhooks/);
  });

  test('an unknown agency is an operational failure (exit 1)', async () => {
    const result = await cli(['webhook', 'list', '--agency', 'agy_0000000000000000'], env);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no agency agy_0000000000000000.\n' });
  });
});

describe('webhook disable and enable', () => {
  test('disable bumps the epoch and stops deliveries; enable clears the failure streak', async () => {
    const agencyId = await newAgency();
    const { id } = await newWebhook(agencyId);
    await sql`UPDATE webhooks SET failing_since = now() - interval '1 day', warned_at = now(),
                     last_error = 'timeout'
               WHERE id = ${id}`.execute(t.db);
    const before = await webhookRow(id);
    expect(before.failing_since).toBeInstanceOf(Date);

    const off = await cliJson<WebhookJson>(['webhook', 'disable', '--id', id], env);
    expect(off).toMatchObject({ id, state: 'disabled', disabled_at: expect.any(String) });
    const disabled = await webhookRow(id);
    expect(disabled).toMatchObject({ disabled_reason: 'owner', epoch: before.epoch + 1 });
    expect(disabled.disabled_at).toBeInstanceOf(Date);

    const human = await cli(['webhook', 'enable', '--id', id], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`Webhook ${id} is active`));
    const enabled = await webhookRow(id);
    expect(enabled).toMatchObject({
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
      warned_at: null,
      epoch: before.epoch + 1,
    });
    const listed = await cliJson<{ webhooks: WebhookJson[] }>(['webhook', 'list', '--agency', agencyId], env);
    expect(listed.webhooks.map((w) => w.state)).toEqual(['active']);
  });

  test('enable switches a webhook the dispatcher switched off back on', async () => {
    const agencyId = await newAgency();
    const { id } = await newWebhook(agencyId);
    await sql`UPDATE webhooks SET failing_since = now() - interval '3 days', warned_at = now() - interval '2 days',
                     disabled_at = now(), disabled_reason = 'failing', epoch = epoch + 1
               WHERE id = ${id}`.execute(t.db);
    // Disabling a switched-off webhook keeps the reason the owners' e-mail gave.
    const stillOff = await cli(['webhook', 'disable', '--id', id], env);
    expect(stillOff.code).toBe(0);
    expect(stillOff.stdout).toMatch(/is switched off/);
    expect(stillOff.stdout).toMatch(new RegExp(`tripctl webhook enable ${id}`));

    const on = await cliJson<WebhookJson>(['webhook', 'enable', '--id', id], env);
    expect(on).toMatchObject({ id, state: 'active', failing_since: null, disabled_at: null });
    expect(await webhookRow(id)).toMatchObject({ disabled_at: null, failing_since: null, warned_at: null });
  });

  test('disable and enable change only the named webhook', async () => {
    const agencyId = await newAgency();
    const a = await newWebhook(agencyId);
    const b = await newWebhook(agencyId);
    await cliJson(['webhook', 'disable', '--id', a.id], env);
    expect((await webhookRow(b.id)).disabled_at).toBeNull();
  });

  test.each(['disable', 'enable'])(
    '%s of an unknown webhook is an operational failure (exit 1)',
    async (verb) => {
      const result = await cli(['webhook', verb, '--id', 'whk_0000000000000000'], env);
      expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no webhook whk_0000000000000000.\n' });
    },
  );
});
