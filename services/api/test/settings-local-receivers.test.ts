import { hashPassword } from '@trips/settings';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { agencyWithPeople, FormClient, PASSWORD } from './settings-support.ts';
import { startTestApi } from './support.ts';

// Where an owner adds a webhook, the page says how a receiver on this machine is trusted, but only
// where such URLs are allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS, as scripts/start.sh sets it): in
// production the form says https on the public internet, and nothing of the demo (issue 40, item 6).

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

async function addWebhookForm(allowPrivateNetworks: boolean): Promise<string> {
  const api = await startTestApi(t, {
    AMQP_PREFIX: randomAmqpPrefix(),
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: String(allowPrivateNetworks),
  });
  try {
    const people = await agencyWithPeople(
      t.db,
      `Local ${allowPrivateNetworks}`,
      await hashPassword(PASSWORD),
    );
    const owner = new FormClient(api.url);
    await owner.signIn(people.owner.email);
    const overview = await owner.get('/settings');
    expect(overview.status).toBe(200);
    return overview.body.slice(overview.body.indexOf('Add a webhook'));
  } finally {
    await api.stop();
  }
}

test('with local URLs allowed, the add form names scripts/demo-cert.sh', async () => {
  expect(await addWebhookForm(true)).toMatch(
    /This server also delivers to https:\/\/localhost\. For a receiver of your own in the demo,\s+<code>bash scripts\/demo-cert\.sh<\/code> makes a certificate its dispatcher trusts/,
  );
});

test('without, the form says nothing of it', async () => {
  const form = await addWebhookForm(false);
  expect(form).toContain('https only, on the public internet');
  expect(form).not.toContain('demo-cert');
});
