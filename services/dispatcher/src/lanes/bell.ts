import type { DeliveryMessage } from '@trips/contracts';
import type { LaneEntry } from '../deliverer.ts';
import type { DeliveryStore, HoldOptions } from '../store.ts';

/**
 * Rings the lanes about a webhook: a delivery was held in its lane, or it may have room again (an
 * attempt ended, its pause or rate lets one through, its breaker's trial is due). Made before the
 * endpoints and the deliverer, which ring it, and answered by the lanes, which are made after them
 * and serve the lane by attempting through the deliverer.
 */
export class LaneBell {
  private answer: (webhookId: string, why: 'held' | 'room') => void = () => {};

  ring(webhookId: string, why: 'held' | 'room'): void {
    this.answer(webhookId, why);
  }

  answeredBy(answer: (webhookId: string, why: 'held' | 'room') => void): void {
    this.answer = answer;
  }
}

/** How a delivery enters its webhook's lane: committed, then the lanes are rung. */
export function laneEntry(store: DeliveryStore, bell: LaneBell): LaneEntry {
  return {
    async hold(delivery: DeliveryMessage, options: HoldOptions = {}) {
      await store.hold(delivery, options);
      bell.ring(delivery.webhook_id, 'held');
    },
  };
}
