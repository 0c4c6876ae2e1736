/**
 * Turns calls made while an earlier batch is still running into one batch, so the deliveries in
 * flight share one database round trip (and one commit) instead of making one each: on a busy
 * dispatcher most of a delivery's cost was these round trips. An idle batcher starts a batch with
 * the calls of the current tick, so a lone call waits for nothing, unless it is given `lingerMs`:
 * then it waits that long for more calls first (for writes whose callers can wait, see store.ts).
 * Each call is answered by a batch that started after it was made, so it sees what a query of its
 * own would have seen; nothing is cached between batches.
 *
 * When a batch fails, its calls are run one by one, so one bad call (say, an attempt of a webhook
 * deleted meanwhile) fails alone, as it did before batching. That also covers a deadlock between two
 * replicas' attempt batches (each locks several webhook rows): one-row statements cannot deadlock.
 */
export class Batcher<In, Out> {
  private readonly runBatch: (inputs: In[]) => Promise<Out[]>;
  private readonly runOne: (input: In) => Promise<Out>;
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private queue: { input: In; resolve: (out: Out) => void; reject: (error: unknown) => void }[] = [];
  private running = false;
  private scheduled = false;

  constructor(options: {
    /** Answers the inputs' outputs in the same order. */
    runBatch: (inputs: In[]) => Promise<Out[]>;
    runOne: (input: In) => Promise<Out>;
    maxBatch: number;
    /** How long an idle batcher waits for more calls before it starts a batch; default 0. */
    lingerMs?: number;
  }) {
    this.runBatch = options.runBatch;
    this.runOne = options.runOne;
    this.maxBatch = options.maxBatch;
    this.lingerMs = options.lingerMs ?? 0;
  }

  call(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.running && !this.scheduled) {
        // After the current tick (or the linger), so the deliveries that arrived in one read from
        // RabbitMQ go together.
        this.scheduled = true;
        const start = () => {
          this.scheduled = false;
          void this.flush();
        };
        if (this.lingerMs > 0) setTimeout(start, this.lingerMs);
        else process.nextTick(start);
      }
    });
  }

  private async flush(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    const calls = this.queue.splice(0, this.maxBatch);
    try {
      const outputs = await this.runBatch(calls.map((c) => c.input));
      calls.forEach((c, i) => c.resolve(outputs[i]!));
    } catch {
      await Promise.all(
        calls.map((c) =>
          this.runOne(c.input).then(
            (out) => c.resolve(out),
            (error: unknown) => c.reject(error),
          ),
        ),
      );
    } finally {
      this.running = false;
      // The calls that came meanwhile: the next batch starts at once.
      void this.flush();
    }
  }
}
