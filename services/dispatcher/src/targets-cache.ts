import type { Ed25519Signer } from '@trips/contracts/webhook-signing';
import type { DeliveryTargetsChange } from '@trips/db/webhook-changes';
import type { DeliveryTarget, DeliveryTargetRead } from '@trips/db/webhooks';

/** A target as read, its ed25519 keys opened, ready to sign (signing-keys.ts). */
export interface TargetRead extends Omit<DeliveryTargetRead, 'signing_keys'> {
  signing_keys: Ed25519Signer[];
}

/** A webhook as a delivery needs it: the receiver's shared pause made a time of this process's clock. */
export interface Target extends Omit<DeliveryTarget, 'signing_keys'> {
  /** Signers of the ed25519 private keys signing now, newest first; none unless switched on (D11). */
  signing_keys: Ed25519Signer[];
  /** When the receiver's pause ends (ms, this process's clock); null: not paused when read. */
  paused_until: number | null;
}

/** A target as read, and when, on this process's clock, each of its secrets and keys stops signing. */
interface Kept {
  target: Target;
  /** Per secret of `target.secrets`, in order: when it stops signing (Infinity: not before a rotation). */
  until: number[];
  /** The same per key of `target.signing_keys`. */
  keysUntil: number[];
  /** The earliest of them all: before it the target is used as it was read. */
  firstEnd: number;
}

interface Entry<T> {
  /** While the read is under way; lookups meanwhile share it. */
  reading: Promise<T> | undefined;
  value: T | undefined;
  /** Trusted until then without a notification (the TTL), counted from when the read started. */
  expiresAt: number;
}

export interface TargetsCacheOptions {
  /** How long an entry is trusted with no notification about it: the bound should one be lost. */
  ttlMs: number;
  /** Entries kept per map at most; past it the oldest go (they are read again when next needed). */
  maxEntries?: number;
  now?: () => number;
}

/**
 * Each agency's delivery targets (its active webhooks with their secrets, as fan-out needs them)
 * and each webhook's (as a retry or a lane needs it), kept between delivery batches so a batch of
 * deliveries to known webhooks reads nothing from Postgres. One per process, shared by every
 * DeliveryStore.
 *
 * Freshness: Postgres tells of every change of those rows when it commits (migration 0016,
 * targets-listener.ts), and the entries it names are dropped then, so a lookup that starts after
 * the notification arrived reads the change: a change applies within the notification's latency,
 * as it did within a read's before. Three rules keep that true:
 * - A read still under way when a notification about it (or about everything) arrives is not kept:
 *   its entry is gone from the map, and only the entry a read belongs to may take its answer. (The
 *   map itself is the generation counter: it needs no count kept for agencies nobody reads.)
 * - Nothing is kept unless Postgres is being listened to: before LISTEN is in effect, and from the
 *   moment its connection is lost until it is back, every lookup reads Postgres, as if there were
 *   no cache, and the cache starts empty again once listening.
 * - Every entry expires after `ttlMs` anyway, the bound on staleness should a notification ever
 *   be lost without the connection being seen to go.
 * A secret's or a signing key's end (a rotation's overlap) is no change of a row and sends
 * nothing: each keeps when it stops signing, and a lookup leaves out those past it.
 */
export class DeliveryTargetsCache {
  private readonly agencies = new Map<string, Entry<Kept[]>>();
  private readonly webhooks = new Map<string, Entry<Kept | undefined>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private trusted = false;

  constructor(options: TargetsCacheOptions) {
    this.ttlMs = options.ttlMs;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** LISTEN is in effect: lookups are kept from now on, starting from nothing. */
  listening(): void {
    this.clear();
    this.trusted = this.ttlMs > 0;
  }

  /** LISTEN is not in effect (lost, or stopping): every lookup reads, and nothing is kept. */
  notListening(): void {
    this.trusted = false;
    this.clear();
  }

  /** A notification: what it names is read again when next needed. */
  changed(change: DeliveryTargetsChange): void {
    if (change === 'all') return this.clear();
    if (change.agencyId !== null) this.agencies.delete(change.agencyId);
    this.webhooks.delete(change.webhookId);
  }

  /** The agency's active webhooks, ordered by id, each with its secrets signing now. */
  async agencyTargets(
    agencyId: string,
    read: (agencyId: string) => Promise<TargetRead[]>,
  ): Promise<Target[]> {
    const kept = await this.lookup(this.agencies, agencyId, read, (rows, at) =>
      rows.map((row) => keep(row, at)),
    );
    const now = this.now();
    return kept.map((k) => current(k, now));
  }

  /** The webhook, on or off, with its secrets signing now; undefined when there is none. */
  async webhookTarget(
    webhookId: string,
    read: (webhookId: string) => Promise<TargetRead | undefined>,
  ): Promise<Target | undefined> {
    const kept = await this.lookup(this.webhooks, webhookId, read, (row, at) => row && keep(row, at));
    return kept && current(kept, this.now());
  }

  private lookup<R, T>(
    map: Map<string, Entry<T>>,
    key: string,
    read: (key: string) => Promise<R>,
    toKept: (answer: R, readAt: number) => T,
  ): T | Promise<T> {
    const at = this.now();
    if (!this.trusted) return read(key).then((answer) => toKept(answer, at));
    const found = map.get(key);
    if (found && (found.reading || found.expiresAt > at)) return found.reading ?? (found.value as T);

    const entry: Entry<T> = { reading: undefined, value: undefined, expiresAt: at + this.ttlMs };
    entry.reading = read(key).then(
      (answer) => {
        const value = toKept(answer, at);
        // Still this read's entry: nothing about the key (nor everything) was changed since it began.
        if (map.get(key) === entry) {
          entry.value = value;
          entry.reading = undefined;
        }
        return value;
      },
      (error: unknown) => {
        if (map.get(key) === entry) map.delete(key);
        throw error;
      },
    );
    // Re-inserted at the end, so the map's order is the order of reads and the oldest go first.
    map.delete(key);
    map.set(key, entry);
    if (map.size > this.maxEntries) map.delete(map.keys().next().value!);
    return entry.reading;
  }

  private clear(): void {
    this.agencies.clear();
    this.webhooks.clear();
  }
}

function keep(row: TargetRead, readAt: number): Kept {
  const {
    secrets_expire_in_ms: expireInMs,
    signing_keys_expire_in_ms: keysExpireInMs,
    paused_for_ms: pausedForMs,
    ...read
  } = row;
  // Counted from before the read was sent, so a secret ends here no later than in Postgres. A pause
  // may end here up to a round trip early, which a Retry-After in whole seconds does not notice.
  const end = (ms: number | null) => (ms === null ? Infinity : readAt + ms);
  const until = expireInMs.map(end);
  const keysUntil = keysExpireInMs.map(end);
  const target = { ...read, paused_until: pausedForMs === null ? null : readAt + pausedForMs };
  return { target, until, keysUntil, firstEnd: Math.min(...until, ...keysUntil) };
}

/** The target as of `now`: a secret or a key past its end no longer signs. */
function current(kept: Kept, now: number): Target {
  if (now < kept.firstEnd) return kept.target;
  return {
    ...kept.target,
    secrets: kept.target.secrets.filter((_, i) => now < kept.until[i]!),
    signing_keys: kept.target.signing_keys.filter((_, i) => now < kept.keysUntil[i]!),
  };
}
