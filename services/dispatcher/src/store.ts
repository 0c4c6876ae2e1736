import type { Kysely } from 'kysely';
import type { DeliveryMessage } from '@trips/contracts';
import type { Database } from '@trips/db';
import {
  claimHeldDeliveries,
  dropHeldDeliveries,
  holdDeliveries,
  lanesWithHeldDeliveries,
  releaseHeldDeliveries,
  unclaimHeldDeliveries,
  type HeldDelivery,
} from '@trips/db/held-deliveries';
import { recordAttempt, recordAttempts, type NewAttempt } from '@trips/db/webhook-attempts';
import {
  activeDeliveryTargets,
  findDeliveryTarget,
  findDeliveryTargets,
  type DeliveryTarget,
} from '@trips/db/webhooks';
import { Batcher } from './batching.ts';

/** Deliveries in flight per process are bounded by the prefetch; this only caps one statement's size. */
const MAX_BATCH = 500;

/** The webhooks among an agency's active ones that subscribe to the type, keeping their order. */
const subscribedTo = (eventType: string, targets: DeliveryTarget[]) =>
  targets.filter((target) => target.event_types.includes(eventType));

/** One statement for a batch of ids, or for one. */
const idsBatcher = (run: (ids: number[]) => Promise<void>) =>
  new Batcher<number, void>({
    runBatch: async (ids) => (await run(ids), ids.map(() => undefined)),
    runOne: (id) => run([id]),
    maxBatch: MAX_BATCH,
  });

/**
 * The reads and writes deliveries make, batched across the deliveries in flight (batching.ts):
 * fan-out's subscribed webhooks, a retried delivery's target, the attempts log, and the webhook
 * lanes (held deliveries). Same answers and the same freshness as one query per delivery: nothing
 * is cached.
 */
export class DeliveryStore {
  private readonly db: Kysely<Database>;
  private readonly subscriptions: Batcher<{ agencyId: string; eventType: string }, DeliveryTarget[]>;
  private readonly targets: Batcher<string, DeliveryTarget | undefined>;
  private readonly attempts: Batcher<NewAttempt, void>;
  private readonly holds: Batcher<{ delivery: DeliveryMessage; notBefore?: Date }, void>;
  private readonly releases: Batcher<number, void>;
  private readonly unclaims: Batcher<number, void>;

  constructor(db: Kysely<Database>) {
    this.db = db;
    this.subscriptions = new Batcher({
      runBatch: async (keys) => {
        const byAgency = new Map<string, DeliveryTarget[]>();
        for (const target of await activeDeliveryTargets(db, [...new Set(keys.map((k) => k.agencyId))])) {
          const ofAgency = byAgency.get(target.agency_id);
          if (ofAgency) ofAgency.push(target);
          else byAgency.set(target.agency_id, [target]);
        }
        return keys.map(({ agencyId, eventType }) => subscribedTo(eventType, byAgency.get(agencyId) ?? []));
      },
      runOne: async ({ agencyId, eventType }) =>
        subscribedTo(eventType, await activeDeliveryTargets(db, [agencyId])),
      maxBatch: MAX_BATCH,
    });
    this.targets = new Batcher({
      runBatch: async (ids) => {
        const byId = new Map((await findDeliveryTargets(db, [...new Set(ids)])).map((t) => [t.id, t]));
        return ids.map((id) => byId.get(id));
      },
      runOne: (id) => findDeliveryTarget(db, id),
      maxBatch: MAX_BATCH,
    });
    this.attempts = new Batcher({
      // One statement, one commit: every attempt of the batch is on disk before any is acked.
      runBatch: async (list) => {
        await recordAttempts(db, list);
        return list.map(() => undefined);
      },
      runOne: (attempt) => recordAttempt(db, attempt),
      maxBatch: MAX_BATCH,
    });
    const hold = (held: { delivery: DeliveryMessage; notBefore?: Date }[]) =>
      holdDeliveries(
        db,
        held.map(({ delivery, notBefore }) => ({ webhookId: delivery.webhook_id, delivery, notBefore })),
      );
    this.holds = new Batcher({
      runBatch: async (held) => (await hold(held), held.map(() => undefined)),
      runOne: (one) => hold([one]),
      maxBatch: MAX_BATCH,
    });
    this.releases = idsBatcher((ids) => releaseHeldDeliveries(db, ids));
    this.unclaims = idsBatcher((ids) => unclaimHeldDeliveries(db, ids));
  }

  /**
   * The active webhooks of the agency subscribed to the type, ordered by id (spec 6.2), as their
   * first attempts need them: read now, so a changed URL or secret applies.
   */
  subscribed(agencyId: string, eventType: string): Promise<DeliveryTarget[]> {
    return this.subscriptions.call({ agencyId, eventType });
  }

  /** The webhook as an attempt needs it, read now so a changed URL or secret applies. */
  target(webhookId: string): Promise<DeliveryTarget | undefined> {
    return this.targets.call(webhookId);
  }

  /** Resolves once the attempt is committed, with the webhook's streak moved (recordAttempt). */
  record(attempt: NewAttempt): Promise<void> {
    return this.attempts.call(attempt);
  }

  /** Resolves once the delivery is committed to its webhook's lane (not to be tried before `notBefore`). */
  hold(delivery: DeliveryMessage, notBefore?: Date): Promise<void> {
    return this.holds.call({ delivery, notBefore });
  }

  /** Claims the oldest free deliveries of a webhook's lane with ids above `afterId`, for `leaseMs`. */
  claim(webhookId: string, limit: number, leaseMs: number, afterId = 0): Promise<HeldDelivery[]> {
    return claimHeldDeliveries(this.db, webhookId, limit, leaseMs, afterId);
  }

  /** A held delivery is done with: its attempt recorded and any retry confirmed. */
  release(id: number): Promise<void> {
    return this.releases.call(id);
  }

  /** A claimed delivery goes back to its lane unattempted. */
  unclaim(id: number): Promise<void> {
    return this.unclaims.call(id);
  }

  /** The webhooks whose lanes hold deliveries. */
  lanes(): Promise<string[]> {
    return lanesWithHeldDeliveries(this.db);
  }

  /** Empties a webhook's lane (it will never be attempted again); answers how many went. */
  dropLane(webhookId: string): Promise<number> {
    return dropHeldDeliveries(this.db, [webhookId]);
  }
}
