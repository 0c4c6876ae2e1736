// Every run of scripts/start.sh makes a new demo agency with a webhook to the same local receiver,
// which knows only the newest secret. Earlier runs' webhooks to that URL are switched off here
// (their pending retries dropped), or their deliveries would arrive as bad signatures.
import { createDb } from '@trips/db';
import { activeWebhookIdsAt, setWebhookEnabled } from '@trips/db/webhooks';

const url = process.argv[2];
if (!url) throw new Error('usage: node scripts/retire-demo-webhooks.ts <receiver url>');
const db = createDb(process.env.DATABASE_URL ?? 'postgres://localhost:5432/trips', { max: 1 });
try {
  for (const id of await activeWebhookIdsAt(db, url)) await setWebhookEnabled(db, id, false);
} finally {
  await db.destroy();
}
