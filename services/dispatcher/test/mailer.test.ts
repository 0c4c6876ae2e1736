import { createServer, type AddressInfo, type Socket } from 'node:net';
import { sql } from 'kysely';
import { SMTPServer } from 'smtp-server';
import { claimNextNotice, insertOwnerNotices, markNoticeFailed } from '@trips/db/owner-notices';
import { createTestDatabase, LogCapture, startSmtp, waitFor, type TestDatabase } from '@trips/testkit';
import { Mailer } from '../src/mailer.ts';
import { agencyWithOwners, webhookFor } from './support.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});
// Each test counts the notices it owes; none is left over from the one before.
beforeEach(async () => {
  await t.db.deleteFrom('owner_notices').execute();
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

const noticeBy = (subject: string) =>
  t.db.selectFrom('owner_notices').selectAll().where('subject', '=', subject).executeTakeFirstOrThrow();

/** A mail server that accepts connections and never says a word, as a hung one does. */
async function startSilentServer() {
  const sockets: Socket[] = [];
  const server = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sockets,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Sessions of this database other than the asking one that hold a transaction id. */
const writersOpen = async () =>
  (
    await sql<{ pid: number; state: string; query: string }>`
      SELECT pid, state, query FROM pg_stat_activity
       WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`.execute(
      t.db,
    )
  ).rows;

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

test('a mail server that never answers holds no transaction open and holds back no other notice', async () => {
  await owe('Stuck behind a silent server');
  await owe('Sent by the other dispatcher');
  const silent = await startSilentServer();
  const smtp = await startSmtp();
  const logs = new LogCapture();
  const stuck = new Mailer(
    t.db,
    { smtpUrl: silent.url, from: 'x@trips.invalid', sendTimeoutMs: 6_000 },
    logs.logger,
  );
  const other = new Mailer(t.db, { smtpUrl: smtp.url, from: 'x@trips.invalid' }, logs.logger);
  try {
    const started = Date.now();
    const stuckRound = stuck.sendBatch();
    await waitFor(() => silent.sockets.length > 0, { what: 'the mailer to connect to the silent server' });
    // List sync (repositories/sync.ts) is held back by any session holding a transaction id.
    expect(await writersOpen()).toEqual([]);
    // Another dispatcher sends the next notice meanwhile, instead of finding it locked.
    expect(await other.sendBatch()).toBe(1);
    expect(smtp.mails.map((m) => m.subject)).toEqual(['Sent by the other dispatcher']);
    expect(await writersOpen()).toEqual([]);
    // The send ends within the mailer's send timeout, not nodemailer's minutes, as a failed attempt
    // (here on nodemailer's greeting or socket timeout, at most half of it).
    expect(await stuckRound).toBe(0);
    expect(Date.now() - started).toBeLessThan(6_000);
    const stuckNotice = await noticeBy('Stuck behind a silent server');
    expect(stuckNotice).toMatchObject({ sent_at: null, send_attempts: 1, claimed_until: null });
    expect(stuckNotice.last_error).toMatch(/timeout|greeting/i);
  } finally {
    stuck.close();
    other.close();
    await Promise.all([silent.close(), smtp.close()]);
  }
  // Owed still; due now.
  await t.db
    .updateTable('owner_notices')
    .set({ created_at: new Date(Date.now() - 60_000) })
    .execute();
  const again = new Mailer(t.db, { smtpUrl: undefined, from: 'x@trips.invalid' }, logs.logger);
  expect(await again.sendBatch()).toBe(1);
  expect(await unsent()).toHaveLength(0);
});

test('a mail server that keeps talking but never gets anywhere is given up after the send timeout', async () => {
  await owe('Talked to death');
  // Greets, then answers EHLO with continuation lines forever: no step's silence ever lasts long
  // enough for nodemailer's own timeouts.
  const timers: NodeJS.Timeout[] = [];
  const sockets: Socket[] = [];
  const chatty = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    socket.write('220 chatty ESMTP\r\n');
    socket.once('data', () => {
      timers.push(setInterval(() => socket.writable && socket.write('250-still thinking\r\n'), 100));
    });
  });
  await new Promise<void>((resolve) => chatty.listen(0, '127.0.0.1', resolve));
  const url = `smtp://127.0.0.1:${(chatty.address() as AddressInfo).port}`;
  const mailer = new Mailer(
    t.db,
    { smtpUrl: url, from: 'x@trips.invalid', sendTimeoutMs: 2_000 },
    new LogCapture().logger,
  );
  try {
    const started = Date.now();
    expect(await mailer.sendBatch()).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await noticeBy('Talked to death')).toMatchObject({
      send_attempts: 1,
      claimed_until: null,
      last_error: 'the mail server took longer than 2000 ms',
    });
  } finally {
    mailer.close();
    for (const timer of timers) clearInterval(timer);
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => chatty.close(resolve));
  }
});

test('a stop mid-send frees the notice at once, without counting an attempt', async () => {
  await owe('Abandoned by a stop');
  const silent = await startSilentServer();
  const logs = new LogCapture();
  const stopping = new Mailer(t.db, { smtpUrl: silent.url, from: 'x@trips.invalid' }, logs.logger);
  try {
    const round = stopping.sendBatch();
    await waitFor(() => silent.sockets.length > 0, { what: 'the mailer to connect' });
    expect((await noticeBy('Abandoned by a stop')).claimed_until).not.toBeNull();
    stopping.close();
    expect(await round).toBe(0);
  } finally {
    stopping.close();
    await silent.close();
  }
  expect(await noticeBy('Abandoned by a stop')).toMatchObject({ claimed_until: null, send_attempts: 0 });
  const next = new Mailer(t.db, { smtpUrl: undefined, from: 'x@trips.invalid' }, logs.logger);
  expect(await next.sendBatch()).toBe(1); // another dispatcher takes it over at once
  expect(await unsent()).toHaveLength(0);
});

test('two mailers at once share the owed e-mails as they go and never send one twice', async () => {
  const subjects = Array.from({ length: 10 }, (_, i) => `Shared ${i}`);
  for (const subject of subjects) await owe(subject);
  // A slow server, so that both mailers are mid-send at the same time.
  const received: string[] = [];
  let gotFirst!: () => void;
  const firstMessage = new Promise<void>((resolve) => (gotFirst = resolve));
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push(/^Subject: (.*)$/m.exec(Buffer.concat(chunks).toString('utf8'))![1]!.trim());
        gotFirst();
        setTimeout(callback, 100);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  const logs = new LogCapture();
  const first = new Mailer(t.db, { smtpUrl: url, from: 'x@trips.invalid' }, logs.logger);
  const second = new Mailer(t.db, { smtpUrl: url, from: 'x@trips.invalid' }, logs.logger);
  const drain = async (mailer: Mailer) => {
    let sent = 0;
    for (let round = 0; round < 50 && (await unsent()).length > 0; round++) sent += await mailer.sendBatch();
    return sent;
  };
  try {
    const firstDone = drain(first);
    await firstMessage; // the first mailer is mid-send: its claim must not hold the others
    const [byFirst, bySecond] = await Promise.all([firstDone, drain(second)]);
    expect(bySecond).toBeGreaterThan(0);
    expect(byFirst + bySecond).toBe(subjects.length);
    expect([...received].sort()).toEqual([...subjects].sort()); // each exactly once
    expect(await unsent()).toHaveLength(0);
  } finally {
    first.close();
    second.close();
    await new Promise((resolve) => server.close(() => resolve(undefined)));
  }
});

test('a mailer whose claim ran out neither counts an attempt for nor frees the notice taken over', async () => {
  await owe('Taken over');
  const late = await claimNextNotice(t.db, 1);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the 1 ms lease has ended
  const current = await claimNextNotice(t.db, 60_000);
  expect(current?.notice.id).toBe(late!.notice.id);
  expect(await claimNextNotice(t.db, 60_000)).toBeUndefined(); // nobody else gets it meanwhile
  await markNoticeFailed(t.db, late!.notice.id, late!.lease, 'the late one failed');
  expect(await noticeBy('Taken over')).toMatchObject({ send_attempts: 0, last_error: null });
  expect(await claimNextNotice(t.db, 60_000)).toBeUndefined(); // still claimed by the current one
  await markNoticeFailed(t.db, current!.notice.id, current!.lease, 'the current one failed');
  expect(await noticeBy('Taken over')).toMatchObject({
    send_attempts: 1,
    last_error: 'the current one failed',
    claimed_until: null,
  });
  await t.db.updateTable('owner_notices').set({ sent_at: new Date() }).where('sent_at', 'is', null).execute();
});
