// The suite's jest environment: Node's, plus a check that a test file leaves nothing running once
// its afterAll hooks are done. A pool, a broker connection, a server, a child process or a timer
// left open is a defect of the code under test as often as of the test (a stop() that forgets a
// resource leaks it in production too), and in the shared worker it would go on running beside
// the next file. The file fails, naming what was left.
import { TestEnvironment as NodeEnvironment } from 'jest-environment-node';

type Counts = Map<string, number>;

/** How long what a file closed may take to be gone: a socket's close or a child's exit is not instant. */
export const SETTLE_MS = 3_000;
const POLL_MS = 25;

/** What keeps the event loop alive, by kind (TCPSocketWrap, Timeout, ProcessWrap …). */
function activeResources(): Counts {
  const counts: Counts = new Map();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** What `now` has beyond `baseline`, as `TCPSocketWrap ×2`; empty when nothing. */
export function leftOver(baseline: Counts, now: Counts): string[] {
  const extra: string[] = [];
  for (const [kind, count] of now) {
    const more = count - (baseline.get(kind) ?? 0);
    if (more > 0) extra.push(more === 1 ? kind : `${kind} ×${more}`);
  }
  return extra;
}

/**
 * Waits up to `settleMs` for the event loop's resources to fall back to `baseline`; answers what
 * is still there beyond it then (empty when all is gone).
 */
export async function waitForLeftOver(baseline: Counts, settleMs = SETTLE_MS): Promise<string[]> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const extra = leftOver(baseline, activeResources());
    if (extra.length === 0 || Date.now() >= deadline) return extra;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS).unref());
  }
}

export default class LeakCheckEnvironment extends NodeEnvironment {
  private baseline: Counts = new Map();
  private readonly testPath: string;

  constructor(...args: ConstructorParameters<typeof NodeEnvironment>) {
    super(...args);
    this.testPath = args[1].testPath;
  }

  override async setup(): Promise<void> {
    // Node opens the standard streams on first use, and jest's ESM loader touches them all when
    // a file imports node:process: open them now, so that they are part of the baseline.
    void [process.stdin, process.stdout, process.stderr];
    this.baseline = activeResources();
    await super.setup();
  }

  override async teardown(): Promise<void> {
    await super.teardown();
    const extra = await waitForLeftOver(this.baseline);
    if (extra.length > 0) {
      throw new Error(
        `${this.testPath} left ${extra.join(', ')} running ${SETTLE_MS} ms after its last afterAll: ` +
          'close every pool, connection, server, child process and timer it opened (a stop() that ' +
          'forgets one leaks it in production too).',
      );
    }
  }
}
