/**
 * The process's room for lane attempts (DISPATCHER_LANE_MAX_IN_FLIGHT), shared by every lane: when
 * it is full, the lanes waiting for room take turns (round robin), so many busy webhooks share it
 * fairly and none waits behind another's whole backlog.
 */
export class LaneTurns {
  private readonly max: number;
  private inFlight = 0;
  /** Lanes with deliveries to start when the process has room, in turn order. */
  private readonly waiting = new Set<string>();

  constructor(max: number) {
    this.max = max;
  }

  get full(): boolean {
    return this.inFlight >= this.max;
  }

  /** The lane waits for the process's room. */
  wait(webhookId: string): void {
    this.waiting.add(webhookId);
  }

  started(): void {
    this.inFlight++;
  }

  /** A lane attempt ended: the lane's turn goes to the back of the line, if it is still `known`. */
  ended(webhookId: string, known: boolean): void {
    this.inFlight--;
    this.waiting.delete(webhookId);
    if (known) this.waiting.add(webhookId);
  }

  /** The lanes whose turn it is, in order, each taken off the line, while the process has room. */
  *due(): Generator<string> {
    for (const id of [...this.waiting]) {
      if (this.full) return;
      this.waiting.delete(id);
      yield id;
    }
  }

  forget(webhookId: string): void {
    this.waiting.delete(webhookId);
  }
}
