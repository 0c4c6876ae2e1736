import type { Kysely } from 'kysely';
import type { Database, WebhookRow } from '@trips/db';
import { dropHeldDeliveries } from '@trips/db/held-deliveries';
import { insertOwnerNotices } from '@trips/db/owner-notices';
import { listOwnerEmails } from '@trips/db/users';
import { listWebhookAttempts } from '@trips/db/webhook-attempts';
import { switchOffFailingWebhooks, warnFailingWebhooks } from '@trips/db/webhooks';
import type { Logger } from '@trips/runtime';
import type { DeliveryPolicy } from './config.ts';
import { failingNotice, lastErrorWords, switchedOffNotice, type NoticeContext } from './notices.ts';

/**
 * The durable switch-off policy (spec 3.3, D7), separate from the per-process breakers: a webhook
 * with no 2xx for WEBHOOK_FAILURE_WINDOW is switched off and its owners are told once; at a third of
 * the window they are warned once. It reads only the streak the attempts wrote (webhooks.failing_since),
 * so it holds across restarts and replicas, and it runs on a timer, so a webhook is switched off when
 * the window passes even if no delivery happens to fail at that moment. The e-mails are written in
 * the same transaction as the change that owes them, and sent by the mailer.
 */
export async function enforceSwitchOff(
  db: Kysely<Database>,
  policy: Pick<DeliveryPolicy, 'failureWindowMs' | 'warnAfterMs'>,
  ctx: NoticeContext,
  logger: Logger,
): Promise<{ switchedOff: WebhookRow[]; warned: WebhookRow[] }> {
  return db.transaction().execute(async (trx) => {
    // Switch-off first: a webhook past the whole window needs no warning any more.
    const switchedOff = await switchOffFailingWebhooks(trx, policy.failureWindowMs);
    // Their lanes will never be attempted again: what waits there goes with the switch-off.
    await dropHeldDeliveries(
      trx,
      switchedOff.map((w) => w.id),
    );
    const warned = await warnFailingWebhooks(trx, policy.warnAfterMs);
    const owed = [
      ...switchedOff.map((w) => ({ webhook: w, notice: switchedOffNotice })),
      ...warned.map((w) => ({ webhook: w, notice: failingNotice })),
    ];
    for (const { webhook, notice } of owed) {
      const owners = await listOwnerEmails(trx, webhook.agency_id);
      if (owners.length === 0) logger.warn({ webhookId: webhook.id }, 'agency has no owner to tell');
      // The latest failure as the settings page's delivery log picks it.
      const [latestFailure] = await listWebhookAttempts(trx, webhook.id, { failedOnly: true, limit: 1 });
      const lastError = lastErrorWords(webhook, latestFailure);
      await insertOwnerNotices(
        trx,
        owners.map((owner) => notice(webhook, owner, ctx, lastError)),
      );
    }
    for (const w of switchedOff) {
      logger.warn(
        { webhookId: w.id, agencyId: w.agency_id, failingSince: w.failing_since },
        'webhook switched off',
      );
    }
    for (const w of warned) {
      logger.info(
        { webhookId: w.id, agencyId: w.agency_id, failingSince: w.failing_since },
        'owners warned: webhook failing',
      );
    }
    return { switchedOff, warned };
  });
}
