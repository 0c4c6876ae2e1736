import { createTestCa, startReceiver, waitFor, type TestCa, type TestReceiver } from '@trips/testkit';
import { generateSigningKeyPair } from '@trips/contracts/webhook-signing';
import { addSigningKeyIn } from '@trips/db/webhook-signing-keys';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// A webhook's ed25519 keys as the dispatcher reads them (D11): switched on, the next delivery
// carries a v1a for each key; a key that does not open with the platform's sealing key is left out
// and said in the log, and costs neither that webhook's deliveries nor the agency's other webhooks'.
// (verifiers.test.ts checks the signatures themselves with libraries of others.)

let ca: TestCa;
let receiver: TestReceiver;
let d: TestDispatcher;

beforeAll(async () => {
  ca = await createTestCa();
  receiver = await startReceiver(ca);
  d = await startTestDispatcher({ WEBHOOK_CA_FILE: ca.caFile });
});
afterAll(async () => {
  await d?.cleanup();
  await receiver?.close();
});

const v1aCount = (webhookId: string, eventId: string) => {
  const request = receiver.requests.find(
    (r) => r.headers['service-event-id'] === eventId && r.path === `/hooks?${webhookId}`,
  );
  return (
    request &&
    String(request.headers['webhook-signature'])
      .split(' ')
      .filter((e) => e.startsWith('v1a,')).length
  );
};

test('switched on, the next delivery carries v1a; a key that does not open is left out, said, and stops nothing', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const signed = await webhookFor(d.db, agencyId, `${receiver.url}?pending`);
  const plain = await webhookFor(d.db, agencyId, `${receiver.url}?pending`);
  for (const { id } of [signed, plain])
    await d.db
      .updateTable('webhooks')
      .set({ url: `${receiver.url}?${id}` })
      .where('id', '=', id)
      .execute();
  const addKey = (webhookId: string) =>
    d.changeHeard(agencyId, () =>
      d.db
        .transaction()
        .execute((trx) => addSigningKeyIn(trx, webhookId, generateSigningKeyPair(), 3600_000)),
    );

  await addKey(signed.id);
  await addKey(signed.id); // rotated: two keys sign during the overlap
  const first = makeEvent();
  await d.publish(agencyId, first);
  await waitFor(
    () => v1aCount(signed.id, first.id) !== undefined && v1aCount(plain.id, first.id) !== undefined,
    {
      what: 'both deliveries',
    },
  );
  expect([v1aCount(signed.id, first.id), v1aCount(plain.id, first.id)]).toEqual([2, 0]);

  // The newest key's sealed text moved from another webhook: it opens only as that webhook's.
  const other = await webhookFor(d.db, agencyId, `${receiver.url}?other`, ['payment.paid']);
  await addKey(other.id);
  const { private_key_sealed: foreign } = await d.db
    .selectFrom('webhook_signing_keys')
    .select('private_key_sealed')
    .where('webhook_id', '=', other.id)
    .executeTakeFirstOrThrow();
  const newest = await d.db
    .selectFrom('webhook_signing_keys')
    .select('id')
    .where('webhook_id', '=', signed.id)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  await d.changeHeard(agencyId, () =>
    d.db
      .updateTable('webhook_signing_keys')
      .set({ private_key_sealed: foreign })
      .where('id', '=', newest.id)
      .execute(),
  );
  const second = makeEvent();
  await d.publish(agencyId, second);
  await waitFor(
    () => v1aCount(signed.id, second.id) !== undefined && v1aCount(plain.id, second.id) !== undefined,
    {
      what: 'both deliveries, the key not opening',
    },
  );
  expect([v1aCount(signed.id, second.id), v1aCount(plain.id, second.id)]).toEqual([1, 0]);
  expect(d.logs.text()).toContain(`"webhookId":"${signed.id}"`);
  expect(d.logs.text()).toContain("does not open with the platform's sealing key");
  expect(d.logs.text()).not.toContain(foreign.slice(0, 30));
});
