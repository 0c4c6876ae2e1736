import { connect } from 'node:net';
import type { Event } from '../openapi-types.ts';
import { signDelivery } from '../webhooks/sign.ts';
import { shown } from './output.ts';

/** The dispatcher's answer time (D9 WEBHOOK_TIMEOUT default): a receiver must cope with it here too. */
const FORWARD_TIMEOUT_MS = 10_000;
/** How much of a refusal's body is read for its reason, and how much of its first line shown. */
const REASON_BYTES = 4096;
const REASON_CHARS = 200;

export interface Forwarded {
  status: number;
  ms: number;
}

/** A forward that got no 2xx: `message` says what to do about it. */
export class ForwardError extends Error {
  readonly status: number | undefined;
  readonly ms: number;
  /** Nothing accepted the connection: worth retrying as soon as something does. */
  readonly refused: boolean;
  constructor(message: string, ms: number, options: { status?: number; refused?: boolean } = {}) {
    super(message);
    this.status = options.status;
    this.ms = ms;
    this.refused = options.refused ?? false;
  }
}

const causeCode = (error: unknown) => (error as { cause?: { code?: string } })?.cause?.code;

function unreachable(url: string, error: unknown): string {
  const code = causeCode(error);
  if (code === 'ECONNREFUSED')
    return `nothing is listening at ${url} (connection refused): start your receiver, or point --forward-to at the port it listens on`;
  if (code === 'ENOTFOUND') return `the host of ${url} does not resolve: check --forward-to`;
  if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET')
    return `${url} closed the connection without an answer: is something else listening there (an HTTPS server while --forward-to says http:, say)? Point --forward-to at your receiver`;
  return `could not reach ${url}: ${shown(code ?? (error as Error)?.message ?? String(error))}`;
}

/** The first line of an answer's body, read up to REASON_BYTES, escaped and cut for a terminal. */
async function reasonOf(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < REASON_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).subarray(0, REASON_BYTES).toString('utf8');
  return shown(text.split('\n', 1)[0]!.trim(), REASON_CHARS);
}

function refusal(url: string, status: number, reason: string): string {
  const said = `${url} answered ${status}${reason ? `: ${reason}` : ''}`;
  if (status >= 400 && status < 500)
    return `${said}. If your receiver checks signatures, it must verify with the secret trips listen printed at start, not your webhook's`;
  return `${said}; the service would retry it`;
}

/** The forward's own timeout, told apart from the caller's stop. */
class ForwardTimeout extends Error {}

/** The caller's signal and the forward's own timeout as one (AbortSignal.any is Node 20.3+). */
function withTimeout(signal: AbortSignal): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new ForwardTimeout()), FORWARD_TIMEOUT_MS);
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    },
  };
}

/** POSTs `event` to `url` exactly as the dispatcher would: same body, headers and signatures (D7, D11). */
export async function forward(
  url: string,
  event: Event,
  secret: string,
  signal: AbortSignal,
): Promise<Forwarded> {
  const { body, headers } = signDelivery(event, [secret], Math.floor(Date.now() / 1000));
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const attempt = withTimeout(signal);
  try {
    // Redirects are not followed, as the dispatcher does not follow them.
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: attempt.signal,
    });
    if (response.status >= 200 && response.status <= 299) {
      await response.arrayBuffer().catch(() => undefined);
      return { status: response.status, ms: elapsed() };
    }
    const reason = await reasonOf(response).catch(() => '');
    throw new ForwardError(refusal(url, response.status, reason), elapsed(), { status: response.status });
  } catch (error) {
    if (error instanceof ForwardError || signal.aborted) throw error;
    if (attempt.signal.reason instanceof ForwardTimeout)
      throw new ForwardError(`no answer from ${url} within ${FORWARD_TIMEOUT_MS / 1000} s`, elapsed());
    throw new ForwardError(unreachable(url, error), elapsed(), {
      refused: causeCode(error) === 'ECONNREFUSED',
    });
  } finally {
    attempt.done();
  }
}

/** Whether something accepts a TCP connection at `url`'s host and port now (within a second). */
export function accepts(url: URL): Promise<boolean> {
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1'); // an IPv6 literal without its brackets
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1_000 });
    const end = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.once('connect', () => end(true));
    socket.once('timeout', () => end(false));
    socket.once('error', () => end(false));
  });
}
