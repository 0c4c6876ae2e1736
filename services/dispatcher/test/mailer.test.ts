import { insertOwnerNotices } from '@trips/db';
import { createTestDatabase, LogCapture, startSmtp, type TestDatabase } from '@trips/testkit';
import { Mailer } from '../src/mailer.ts';
import { agencyWithOwners, webhookFor } from './support.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});

async function owe(subject: string) {
  const { agencyId, owners } = await agencyWithOwners(t.db);
  const { id } = await webhookFor(t.db, agencyId, 'https://hooks.example.com/x');
  await insertOwnerNotices(t.db, [
    {
      agencyId,
      webhookId: id,
      kind: 'webhook_switched_off',
      recipient: owners[0]!,
      subject,
      body: 'the body',
    },
  ]);
  return owners[0]!;
}

const unsent = async () =>
  t.db.selectFrom('owner_notices').selectAll().where('sent_at', 'is', null).execute();

test('without SMTP_URL an e-mail is written to the log and counts as sent', async () => {
  const recipient = await owe('Logged instead');
  const logs = new LogCapture();
  const mailer = new Mailer(t.db, { smtpUrl: undefined, from: 'x@trips.invalid' }, logs.logger);
  expect(await mailer.sendBatch()).toBe(1);
  expect(logs.text()).toContain('Logged instead');
  expect(logs.text()).toContain(recipient);
  expect(await unsent()).toHaveLength(0);
  expect(await mailer.sendBatch()).toBe(0); // sent once only
});

test('an SMTP server that is down keeps the e-mail owed; it goes out once the server is back', async () => {
  await owe('Delayed by the outage');
  const smtp = await startSmtp();
  const url = smtp.url;
  await smtp.close(); // nothing listens there now
  const logs = new LogCapture();
  const down = new Mailer(t.db, { smtpUrl: url, from: 'x@trips.invalid' }, logs.logger);
  expect(await down.sendBatch()).toBe(0);
  const [owed] = await unsent();
  expect(owed).toMatchObject({ subject: 'Delayed by the outage', send_attempts: 1 });
  expect(owed!.last_error).toBeTruthy();
  down.close();

  const up = await startSmtp();
  try {
    // Owed notices wait 2^attempts seconds after a failure; make this one due now.
    await t.db
      .updateTable('owner_notices')
      .set({ created_at: new Date(Date.now() - 60_000) })
      .execute();
    const mailer = new Mailer(t.db, { smtpUrl: up.url, from: 'x@trips.invalid' }, logs.logger);
    expect(await mailer.sendBatch()).toBe(1);
    expect(up.mails.map((m) => m.subject)).toEqual(['Delayed by the outage']);
    expect(await unsent()).toHaveLength(0);
    mailer.close();
  } finally {
    await up.close();
  }
});
