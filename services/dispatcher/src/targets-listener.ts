import {
  listenForDeliveryTargetChanges,
  type DeliveryTargetsChange,
  type DeliveryTargetsListener,
} from '@trips/db/webhook-changes';
import { atMostEvery, type Logger } from '@trips/runtime';
import type { DeliveryTargetsCache } from './targets-cache.ts';

/** What the listener tells of: a change, or that the cache is in use again, or no longer. */
export type TargetsCacheEvent = DeliveryTargetsChange | 'listening' | 'lost';

/**
 * A pause between attempts to listen again. Short: until then every delivery batch reads its
 * webhooks from Postgres (correct, only dearer), and each attempt is one connection.
 */
const RETRY_MS = 1_000;

export interface TargetsListenerOptions {
  /** Told of every change, and when the cache starts or stops being used (tests). */
  onEvent?: (event: TargetsCacheEvent) => void;
  /** The pause before listening again (tests lengthen it to watch the cache bypassed). */
  retryMs?: number;
  /**
   * Told when a receiver's pause began or grew, whichever dispatcher was asked (migration 0021),
   * with when it ends on this process's clock: attempts already claimed or admitted hold off too.
   */
  onPause?: (webhookId: string, until: number) => void;
}

/**
 * Keeps one connection of the dispatcher LISTENing for changes of delivery targets (migration
 * 0016) and tells the cache of each. The cache is used only while the connection listens: it is
 * dropped whenever the connection goes, and started afresh once LISTEN is in effect again, since
 * the changes made in between were told to nobody.
 */
export class TargetsListener {
  private readonly databaseUrl: string;
  private readonly cache: DeliveryTargetsCache;
  private readonly logger: Logger;
  private readonly onEvent: ((event: TargetsCacheEvent) => void) | undefined;
  private readonly onPause: ((webhookId: string, until: number) => void) | undefined;
  private readonly retryMs: number;
  /** A Postgres that stays away would otherwise log a warning every retry. */
  private readonly warnDue = atMostEvery(60_000);
  private listener: DeliveryTargetsListener | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    databaseUrl: string,
    cache: DeliveryTargetsCache,
    logger: Logger,
    options: TargetsListenerOptions = {},
  ) {
    this.databaseUrl = databaseUrl;
    this.cache = cache;
    this.logger = logger;
    this.onEvent = options.onEvent;
    this.onPause = options.onPause;
    this.retryMs = options.retryMs ?? RETRY_MS;
  }

  /**
   * Resolves after the first attempt, listening or not: when it failed, deliveries read their
   * webhooks from Postgres meanwhile, and the listener keeps trying.
   */
  async start(): Promise<void> {
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.cache.notListening();
    await this.listener?.close();
    this.listener = undefined;
  }

  private async listen(): Promise<void> {
    try {
      const listener = await listenForDeliveryTargetChanges(
        this.databaseUrl,
        {
          onChange: (change) => {
            this.cache.changed(change);
            if (change !== 'all' && change.pausedForMs !== undefined)
              this.onPause?.(change.webhookId, Date.now() + change.pausedForMs);
            this.onEvent?.(change);
          },
          onLost: (error) => this.lost(error),
        },
        'trips-dispatcher-listener',
      );
      if (this.stopped) return void (await listener.close());
      this.listener = listener;
      this.cache.listening();
      this.logger.info('listening for webhook changes; delivery targets are cached');
      this.onEvent?.('listening');
    } catch (error) {
      if (this.stopped) return;
      if (this.warnDue())
        this.logger.warn(
          { err: error },
          'cannot listen for webhook changes; every delivery batch reads its webhooks until it can',
        );
      this.retrySoon();
    }
  }

  private lost(error?: Error): void {
    this.cache.notListening();
    this.listener = undefined;
    this.onEvent?.('lost');
    if (this.stopped) return;
    this.logger.warn(
      { err: error },
      'lost the connection listening for webhook changes; every delivery batch reads its webhooks until it is back',
    );
    this.retrySoon();
  }

  private retrySoon(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) void this.listen();
    }, this.retryMs);
  }
}
