import type { Kysely } from 'kysely';
import type { DeliveryMessage } from '@trips/contracts';
import type { Database } from '@trips/db';
import type { Logger } from '@trips/runtime';
import {
  claimHeldDeliveries,
  dropHeldDeliveries,
  holdDeliveries,
  lanesWithHeldDeliveries,
  releaseHeldDeliveries,
  rescheduleHeldDeliveries,
  unclaimHeldDeliveries,
  type HeldDelivery,
} from '@trips/db/held-deliveries';
import { recordAttempt, recordAttempts, type NewAttempt } from '@trips/db/webhook-attempts';
import { pauseWebhook, reserveSendTimes, type Pause } from '@trips/db/webhook-pace';
import {
  activeDeliveryTargets,
  findDeliveryTarget,
  findDeliveryTargets,
  type DeliveryTargetRead,
} from '@trips/db/webhooks';
import { Batcher } from './batching.ts';
import { SigningKeyOpener } from './signing-keys.ts';
import type { DeliveryTargetsCache, Target, TargetRead } from './targets-cache.ts';

/** Deliveries in flight per process are bounded by the prefetch; this only caps one statement's size. */
const MAX_BATCH = 500;

/**
 * How long a finished attempt waits for others before they are recorded together. At a steady
 * rate attempts finish a few at a time, and each recording was a statement and a commit of its
 * own; waiting this long gathers several into one. Only the
 * message's ack and the attempts log wait: the receiver has its delivery already.
 */
const RECORD_LINGER_MS = 10;

/**
 * How attempts are gathered into one statement and commit: bench:dispatcher's bare consumer
 * (test/bench/pipeline-bare-consumer.ts) records its attempts batched the very same way.
 */
export const ATTEMPT_BATCHING = { maxBatch: MAX_BATCH, lingerMs: RECORD_LINGER_MS };

/** The webhooks among an agency's active ones that subscribe to the type, keeping their order. */
const subscribedTo = (eventType: string, targets: Target[]) =>
  targets.filter((target) => target.event_types.includes(eventType));

/** How a delivery is held in its webhook's lane. */
export interface HoldOptions {
  /** Not to be tried before then; absent: as soon as its webhook has room. */
  notBefore?: Date;
  /** When its event's change was captured, kept with it for the lag metrics; absent when not known. */
  capturedAt?: Date;
}

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
 * lanes (held deliveries). The webhooks are kept in the process's cache between batches
 * (targets-cache.ts says how fresh they stay); what it does not hold is read on this store's
 * pool, batched.
 */
export class DeliveryStore {
  private readonly db: Kysely<Database>;
  private readonly cache: DeliveryTargetsCache;
  private readonly readAgency: (agencyId: string) => Promise<TargetRead[]>;
  private readonly readWebhook: (webhookId: string) => Promise<TargetRead | undefined>;
  private readonly attempts: Batcher<NewAttempt, void>;
  private readonly holds: Batcher<{ delivery: DeliveryMessage } & HoldOptions, void>;
  private readonly releases: Batcher<number, void>;
  private readonly unclaims: Batcher<number, void>;
  private readonly reschedules: Batcher<{ id: number; delivery: DeliveryMessage; notBefore: Date }, void>;

  constructor(db: Kysely<Database>, cache: DeliveryTargetsCache, logger: Logger) {
    this.db = db;
    this.cache = cache;
    const agencies = new Batcher<string, DeliveryTargetRead[]>({
      runBatch: async (agencyIds) => {
        const byAgency = new Map<string, DeliveryTargetRead[]>();
        for (const target of await activeDeliveryTargets(db, [...new Set(agencyIds)])) {
          const ofAgency = byAgency.get(target.agency_id);
          if (ofAgency) ofAgency.push(target);
          else byAgency.set(target.agency_id, [target]);
        }
        return agencyIds.map((agencyId) => byAgency.get(agencyId) ?? []);
      },
      runOne: (agencyId) => activeDeliveryTargets(db, [agencyId]),
      maxBatch: MAX_BATCH,
    });
    // Each read's ed25519 keys are opened once, as it is kept (D11).
    const keys = new SigningKeyOpener(db, (webhookId) =>
      logger.warn(
        { webhookId },
        "an ed25519 key of the webhook does not open with the platform's sealing key (webhook_signing_key_seal): its deliveries go without that v1a",
      ),
    );
    this.readAgency = async (agencyId) => keys.openAll(await agencies.call(agencyId));
    const webhooks = new Batcher<string, DeliveryTargetRead | undefined>({
      runBatch: async (ids) => {
        const byId = new Map((await findDeliveryTargets(db, [...new Set(ids)])).map((t) => [t.id, t]));
        return ids.map((id) => byId.get(id));
      },
      runOne: (id) => findDeliveryTarget(db, id),
      maxBatch: MAX_BATCH,
    });
    this.readWebhook = async (webhookId) => {
      const row = await webhooks.call(webhookId);
      return row && keys.open(row);
    };
    this.attempts = new Batcher({
      // One statement, one commit: every attempt of the batch is on disk before any is acked.
      runBatch: async (list) => {
        await recordAttempts(db, list);
        return list.map(() => undefined);
      },
      runOne: (attempt) => recordAttempt(db, attempt),
      ...ATTEMPT_BATCHING,
    });
    const hold = (held: ({ delivery: DeliveryMessage } & HoldOptions)[]) =>
      holdDeliveries(
        db,
        held.map(({ delivery, notBefore, capturedAt }) => ({
          webhookId: delivery.webhook_id,
          delivery,
          notBefore,
          capturedAt,
        })),
      );
    this.holds = new Batcher({
      runBatch: async (held) => (await hold(held), held.map(() => undefined)),
      runOne: (one) => hold([one]),
      maxBatch: MAX_BATCH,
    });
    this.releases = idsBatcher((ids) => releaseHeldDeliveries(db, ids));
    this.unclaims = idsBatcher((ids) => unclaimHeldDeliveries(db, ids));
    this.reschedules = new Batcher({
      runBatch: async (rows) => (await rescheduleHeldDeliveries(db, rows), rows.map(() => undefined)),
      runOne: (row) => rescheduleHeldDeliveries(db, [row]),
      maxBatch: MAX_BATCH,
    });
  }

  /**
   * The active webhooks of the agency subscribed to the type, ordered by id (spec 6.2), as their
   * first attempts need them, as of the last change Postgres told of (targets-cache.ts).
   */
  async subscribed(agencyId: string, eventType: string): Promise<Target[]> {
    return subscribedTo(eventType, await this.cache.agencyTargets(agencyId, this.readAgency));
  }

  /** The webhook as an attempt needs it, as of the last change Postgres told of (targets-cache.ts). */
  target(webhookId: string): Promise<Target | undefined> {
    return this.cache.webhookTarget(webhookId, this.readWebhook);
  }

  /** Resolves once the attempt is committed, with the webhook's streak moved (recordAttempt). */
  record(attempt: NewAttempt): Promise<void> {
    return this.attempts.call(attempt);
  }

  /** Resolves once the delivery is committed to its webhook's lane, with its capture time when known. */
  hold(delivery: DeliveryMessage, options: HoldOptions = {}): Promise<void> {
    return this.holds.call({ delivery, ...options });
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

  /**
   * A claimed delivery goes back to its place in its lane as it is to be attempted next, not before
   * `notBefore` (the receiver asked to wait).
   */
  reschedule(id: number, delivery: DeliveryMessage, notBefore: Date): Promise<void> {
    return this.reschedules.call({ id, delivery, notBefore });
  }

  /** Pauses the webhook for every dispatcher (the receiver asked to wait); see webhook-pace.ts. */
  pause(webhookId: string, pause: Pause): Promise<boolean> {
    return pauseWebhook(this.db, webhookId, pause);
  }

  /** Reserves send times of the webhook's owner's rate limit; answers when the first is, from now. */
  reserveSendTimes(webhookId: string, count: number, intervalMs: number): Promise<number> {
    return reserveSendTimes(this.db, webhookId, count, intervalMs);
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
