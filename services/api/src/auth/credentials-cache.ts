import { hash } from 'node:crypto';
import pg from 'pg';
import type { KeyCredentials } from '@trips/db/api-keys';
import type { Logger } from '@trips/runtime';

interface Entry {
  value: Promise<KeyCredentials | undefined>;
  /** The credentials once loaded: a request for a known key then needs no promise at all. */
  loaded: KeyCredentials | undefined;
  expiresAt: number;
}

/**
 * How the cache names a key: SHA-256 of it (what api_keys.hash stores, see hashApiKey) in base64. One call into
 * OpenSSL that returns the string the cache looks up, where a Hash object, its digest Buffer and
 * that Buffer's base64 cost a request several times as much.
 */
export const keyHashOf = (key: string): string => hash('sha256', key, 'base64');

/**
 * Keys and their agency's status, cached per replica so a request costs no extra query.
 *
 * Staleness is bounded two ways: every change to api_keys or agencies fires a Postgres NOTIFY
 * (a trigger, so any writer counts) that clears the cache at once on every replica, and each
 * entry also expires after `ttlMs` in case a notification was missed while the listener was
 * reconnecting. Unknown keys are not cached, so a flood of made-up keys cannot evict real ones.
 */
export class CredentialsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly load: (hash: Buffer) => Promise<KeyCredentials | undefined>;
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(
    load: (hash: Buffer) => Promise<KeyCredentials | undefined>,
    ttlMs: number,
    maxEntries = 50_000,
  ) {
    this.load = load;
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
  }

  /**
   * The credentials of the key whose `keyHashOf` is `keyHash`: at once when they are loaded and
   * fresh (the common case), otherwise a promise of them (undefined for an unknown key).
   */
  get(keyHash: string): KeyCredentials | Promise<KeyCredentials | undefined> {
    const now = Date.now();
    const cached = this.entries.get(keyHash);
    if (cached && cached.expiresAt > now) return cached.loaded ?? cached.value;

    // Concurrent requests with the same key share one load.
    const value = this.load(Buffer.from(keyHash, 'base64'));
    const entry: Entry = { value, loaded: undefined, expiresAt: now + this.ttlMs };
    this.entries.set(keyHash, entry);
    value.then(
      (found) => {
        if (found) entry.loaded = found;
        else if (this.entries.get(keyHash) === entry) this.entries.delete(keyHash);
      },
      () => this.entries.get(keyHash) === entry && this.entries.delete(keyHash),
    );
    if (this.entries.size > this.maxEntries) {
      // Map iteration is insertion order: the oldest entry goes first.
      this.entries.delete(this.entries.keys().next().value!);
    }
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * Keeps one connection LISTENing on `auth_changed` and clears the cache on each notification,
 * and on every reconnect (notifications sent while disconnected are lost).
 */
export class AuthChangeListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly databaseUrl: string;
  private readonly cache: CredentialsCache;
  private readonly logger: Logger;

  constructor(databaseUrl: string, cache: CredentialsCache, logger: Logger) {
    this.databaseUrl = databaseUrl;
    this.cache = cache;
    this.logger = logger;
  }

  /** Resolves once listening, so a caller (a test) can rely on invalidation from then on. */
  async start(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: 'trips-api-listener',
    });
    client.on('notification', () => this.cache.clear());
    client.on('error', (error) => {
      this.logger.warn({ err: error }, 'auth change listener lost its connection; reconnecting');
      this.reconnectSoon();
    });
    await client.connect();
    await client.query('LISTEN auth_changed');
    this.client = client;
    this.cache.clear();
  }

  private reconnectSoon(): void {
    this.cache.clear();
    void this.client?.end().catch(() => {});
    this.client = undefined;
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.stopped) return;
      this.start().catch(() => this.reconnectSoon());
    }, 1_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.client?.end().catch(() => {});
  }
}
