import type { AttemptResult } from '../sender.ts';
import { Endpoint, type EndpointProtection, type GuardedResult, type PaceOfTarget } from './endpoint.ts';

export type { EndpointProtection, GuardedResult, PaceOfTarget } from './endpoint.ts';

export interface EndpointsDeps {
  /** Reserves send times of a webhook's owner's rate limit (repositories/webhook-pace.ts). */
  reserveSendTimes: (webhookId: string, count: number, intervalMs: number) => Promise<number>;
  /** Told whenever a webhook's lane may be served: an attempt ended, a pause, rate or breaker let one through. */
  onRoom: (webhookId: string) => void;
}

/** The per-webhook endpoints of this process (endpoint.ts), made on first use and forgotten when idle. */
export class Endpoints {
  private readonly protection: EndpointProtection;
  private readonly deps: EndpointsDeps;
  private readonly byWebhook = new Map<string, Endpoint>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(protection: EndpointProtection, deps: EndpointsDeps, idleMs = 10 * 60_000) {
    this.protection = protection;
    this.deps = deps;
    // Forget endpoints unused for a while, so many webhooks do not mean ever more timers and memory.
    this.sweeper = setInterval(() => this.forgetIdle(idleMs), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  private endpoint(webhookId: string): Endpoint {
    let endpoint = this.byWebhook.get(webhookId);
    if (!endpoint) {
      endpoint = new Endpoint(
        this.protection,
        (count, intervalMs) => this.deps.reserveSendTimes(webhookId, count, intervalMs),
        () => this.deps.onRoom(webhookId),
      );
      this.byWebhook.set(webhookId, endpoint);
    }
    return endpoint;
  }

  /**
   * Attempts now if the webhook may be attempted (lifecycle.ts `admit`); otherwise answers why not.
   * `target`: the webhook as read for this delivery. `inline`: the caller holds a RabbitMQ message.
   */
  run(
    webhookId: string,
    target: PaceOfTarget,
    send: () => Promise<AttemptResult>,
    inline: boolean,
  ): Promise<GuardedResult> {
    const endpoint = this.endpoint(webhookId);
    endpoint.follow(target);
    return endpoint.run(send, inline);
  }

  /** What the webhook's latest read says of its pace (a lane's claim reads it). */
  follow(webhookId: string, target: PaceOfTarget): void {
    this.endpoint(webhookId).follow(target);
  }

  /** Another dispatcher was asked to wait (its pause told through Postgres): hold off here too. */
  pausedElsewhere(webhookId: string, until: number): void {
    this.byWebhook.get(webhookId)?.pauseShared(until);
  }

  /** How many of the webhook's lane deliveries could start now: one, if it is new. */
  room(webhookId: string): number {
    return this.byWebhook.get(webhookId)?.room(Date.now()) ?? 1;
  }

  /** Whether the webhook's breaker is open (no attempt until its trial). */
  isOpen(webhookId: string): boolean {
    return this.byWebhook.get(webhookId)?.open ?? false;
  }

  /** Whether the webhook's next attempt is its breaker's trial. */
  isTrial(webhookId: string): boolean {
    return this.byWebhook.get(webhookId)?.trial ?? false;
  }

  /** Whether a rate applies to the webhook (the receiver's pace, the owner's limit). */
  isPaced(webhookId: string): boolean {
    return this.byWebhook.get(webhookId)?.paced ?? false;
  }

  /** When the webhook's pause ends (ms), 0 when it is not paused here. */
  pausedUntil(webhookId: string): number {
    return this.byWebhook.get(webhookId)?.pausedUntil ?? 0;
  }

  /** How many breakers are open now (a metric). */
  openCount(): number {
    let open = 0;
    for (const endpoint of this.byWebhook.values()) if (endpoint.open) open++;
    return open;
  }

  private forgetIdle(idleMs: number): void {
    const cutoff = Date.now() - idleMs;
    for (const [id, endpoint] of this.byWebhook) {
      if (endpoint.idle && !endpoint.open && endpoint.lastUsed < cutoff) {
        endpoint.shutdown();
        this.byWebhook.delete(id);
      }
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const endpoint of this.byWebhook.values()) endpoint.shutdown();
    this.byWebhook.clear();
  }
}
