import type { IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import {
  ASKS_TO_WAIT,
  createSsrfGuard,
  isDeliverableHost,
  parseRetryAfter,
  type SsrfGuard,
} from '@trips/broker';
import type { Event } from '@trips/contracts';
import { signatureHeaders, type Ed25519Signer } from '@trips/contracts/webhook-signing';

/** D7: the User-Agent of every delivery. */
export const USER_AGENT = 'TripService-Webhooks/1';
/** The attempts log keeps this much of each answer. */
const BODY_LIMIT = 1024;
/** A body sent with its headers follows them within this; one that trickles must not hold a slot. */
const BODY_GRACE_MS = 300;

/**
 * Why an attempt did not succeed; stored in webhook_attempts.error and shown to owners. A non-2xx
 * answer is `http_status` (or `redirect` for a 3xx, which is never followed: spec 4.4).
 */
export type AttemptError =
  | 'http_status'
  | 'redirect'
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns'
  | 'tls'
  | 'ssrf_blocked'
  | 'invalid_url'
  | 'invalid_answer'
  | 'network';

export interface AttemptResult {
  /** When the attempt started. */
  at: Date;
  durationMs: number;
  statusCode: number | null;
  /** Null when a 2xx came back in time. */
  error: AttemptError | null;
  /** The first KiB of the answer, as text. */
  body: string | null;
  /** The Service-Signature sent; absent when nothing was sent. */
  signature?: string;
  /** The answer's headers as `name: value` lines, cut at 1 KiB. */
  responseHeaders?: string | null;
  /** Node's error code of a failure without an answer (the reason in words is told from it). */
  errorDetail?: string | null;
  /**
   * A 429 or 503 answer: the receiver asks us to slow down (D10). `retryAfterMs` is how long its
   * Retry-After asked to wait (seconds or an HTTP date), absent when it gave none that parses.
   */
  backPressure?: { retryAfterMs?: number };
  /**
   * The answer's body was still coming when its grace ran out, and was cut: the connection cannot
   * be used again, so every such attempt costs a new TLS handshake (endpoints.ts gives the
   * endpoint one slot while it answers so). Not stored.
   */
  bodyCut?: boolean;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** An extra CA (PEM) trusted besides the system's. */
  ca?: string;
}

export interface DeliveryRequest {
  url: string;
  event: Event;
  /** The secrets signing now, newest first. */
  secrets: readonly string[];
  /** Signers of the webhook's ed25519 keys signing now, newest first; none unless switched on (D11). */
  ed25519Keys?: readonly Ed25519Signer[];
}

/**
 * Makes one webhook attempt (spec 4.4, D7): a signed POST of the event record, https only, no
 * redirects followed, no retries of its own (ours go through the delay queues), the whole attempt
 * within the timeout, never connecting to a non-public address unless allowed. It never throws:
 * every way an attempt can end is an AttemptResult.
 *
 * Node's own https.request, not an HTTP client library: an attempt needs none of a library's
 * features (redirects, retries, decompression, hooks), and got cost more CPU per delivery than
 * everything else the dispatcher does for it.
 */
export class Sender {
  private readonly agent: HttpsAgent;
  private readonly guard: SsrfGuard;
  private readonly timeoutMs: number;

  constructor(options: SenderOptions) {
    // Keep-alive: a busy endpoint gets its deliveries over a few warm connections instead of a TLS
    // handshake each. Sockets idle for long are closed so a dead endpoint holds nothing.
    // The extra CA goes into one TLS context made here and given to the agent, not into each
    // request's options: https.Agent names its socket pools after the TLS options of every request,
    // `ca` included, so a CA list passed per request (the system's ~120 roots plus ours) was joined
    // into one long string on every delivery, a large share of the dispatcher's CPU.
    // secureContext is not part of that name. Trusted: the system's roots and the extra CA, as before.
    const secureContext = options.ca
      ? createSecureContext({ ca: [...rootCertificates, options.ca] })
      : undefined;
    this.agent = new HttpsAgent({
      keepAlive: true,
      maxSockets: 256,
      timeout: 60_000,
      ...(secureContext && { secureContext }),
    });
    this.guard = createSsrfGuard({ allowPrivateNetworks: options.allowPrivateNetworks });
    this.timeoutMs = options.timeoutMs;
  }

  async send(request: DeliveryRequest): Promise<AttemptResult> {
    const at = new Date();
    const started = performance.now();
    const finish = (fields: Omit<AttemptResult, 'at' | 'durationMs'>): AttemptResult => ({
      at,
      durationMs: Math.round(performance.now() - started),
      ...fields,
    });
    let url: URL;
    try {
      url = new URL(request.url);
      // A host such as `localhost..` is no name at all, whatever a resolver makes of it.
      if (url.protocol !== 'https:' || !isDeliverableHost(url.hostname)) throw new Error('not https');
    } catch {
      return finish({ statusCode: null, error: 'invalid_url', body: null });
    }

    const body = JSON.stringify(request.event);
    // Each attempt signs anew with its own time (D7), both header sets at the same second (D11).
    const signing = signatureHeaders(request.event.id, body, Math.floor(Date.now() / 1000), {
      secrets: request.secrets,
      ed25519: request.ed25519Keys ?? [],
    });
    const signature = signing['service-signature'];
    let response: IncomingMessage | undefined;
    let timer: NodeJS.Timeout | undefined;
    let post: ReturnType<typeof httpsRequest> | undefined;
    try {
      // An IP literal is connected to without a lookup: checked here. A name is checked by the
      // guard's lookup, on the very addresses the connection then uses.
      this.guard.checkUrl(url);
      const sending = httpsRequest(url, {
        method: 'POST',
        agent: this.agent,
        lookup: this.guard.lookup,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': USER_AGENT,
          'service-event-id': request.event.id,
          'service-event-type': request.event.type,
          ...signing,
        },
      });
      post = sending;
      timer = setTimeout(() => sending.destroy(new AttemptTimeout(this.timeoutMs)), this.timeoutMs);
      response = await new Promise<IncomingMessage>((resolve, reject) => {
        sending.once('response', resolve);
        // Kept after the answer: a timeout or reset while its body comes is an error here too.
        sending.on('error', reject);
        sending.end(body);
      });
      const { text, cut } = await readPrefix(response, BODY_LIMIT, BODY_GRACE_MS);
      const status = response.statusCode ?? 0;
      const error =
        status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? 'redirect' : 'http_status';
      return finish({
        statusCode: status,
        error,
        body: text,
        bodyCut: cut,
        ...(ASKS_TO_WAIT.has(status) && {
          backPressure: { retryAfterMs: retryAfterMs(response.headers['retry-after'], Date.now()) },
        }),
        signature,
        responseHeaders: headerLines(response.rawHeaders, BODY_LIMIT),
      });
    } catch (error) {
      return finish({
        statusCode: null,
        error: attemptErrorOf(error),
        body: null,
        signature,
        errorDetail: errorCodeOf(error).slice(0, 100) || null,
      });
    } finally {
      clearTimeout(timer);
      // An answer cut short closes its connection; a whole one has left it to the agent already.
      post?.destroy();
    }
  }

  close(): void {
    this.agent.destroy();
  }
}

/** How long a Retry-After asks to wait from `now` (a date already past: 0); undefined: none that parses. */
function retryAfterMs(value: string | undefined, now: number): number | undefined {
  const asked = parseRetryAfter(value);
  if (!asked) return undefined;
  return 'seconds' in asked ? asked.seconds * 1000 : Math.max(0, asked.at.getTime() - now);
}

/** The attempt's whole time ran out: the status line, headers or body did not come in time. */
class AttemptTimeout extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`no complete answer within ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/**
 * Reads at most `limit` bytes of the answer, for at most `graceMs`, and closes the stream: the
 * status has decided the outcome, the body is only logged, and an endpoint answering slowly or
 * endlessly must hold neither a concurrency slot nor our memory. The attempt's timeout still runs,
 * so the grace never outlasts it. A body cut off keeps what arrived.
 */
async function readPrefix(
  stream: AsyncIterable<Buffer> & { destroy(): void },
  limit: number,
  graceMs: number,
): Promise<{ text: string; cut: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let cut = false;
  const grace = setTimeout(() => {
    cut = true;
    stream.destroy();
  }, graceMs);
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    // The status line came; a body cut off by the grace or the timeout, or broken, does not change
    // the outcome.
  } finally {
    clearTimeout(grace);
  }
  return { text: storableText(Buffer.concat(chunks), limit), cut };
}

/**
 * The answer's bytes as text the attempts log can hold: valid UTF-8 of at most `limit` bytes,
 * without NUL. Receivers answer whatever they like (a Windows-1252 page, UTF-16, binary), and an
 * attempt that cannot be recorded is handled again from the start, for every webhook of the event.
 * Decoding turns each invalid byte into U+FFFD, three bytes in UTF-8, so the text is measured and
 * cut again after decoding; Postgres' text refuses NUL outright.
 */
export function storableText(bytes: Uint8Array, limit: number): string {
  // `stream`: a character the limit cut in two is left out rather than decoded to U+FFFD.
  const text = new TextDecoder().decode(bytes.subarray(0, limit), { stream: true }).replaceAll('\0', '');
  const encoded = Buffer.from(text, 'utf8');
  if (encoded.length <= limit) return text;
  let cut = limit;
  while ((encoded[cut]! & 0xc0) === 0x80) cut--; // back to the first byte of the character cut
  return encoded.subarray(0, cut).toString('utf8');
}

/** The answer's headers as `name: value` lines, as storable text of at most `limit` bytes. */
function headerLines(raw: readonly string[], limit: number): string {
  const lines: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push(`${raw[i]}: ${raw[i + 1]}`);
  return storableText(Buffer.from(lines.join('\n')), limit);
}

const errorCodeOf = (error: unknown): string => {
  const e = error as { code?: string; cause?: { code?: string } };
  return e.code ?? e.cause?.code ?? '';
};

const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH|ERR_OSSL)/;

/** Maps what Node and the SSRF guard throw to the error classes owners see. */
function attemptErrorOf(error: unknown): AttemptError {
  const e = error as { name?: string };
  const code = errorCodeOf(error);
  if (code === 'ssrf_blocked') return 'ssrf_blocked';
  if (e.name === 'TimeoutError' || code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_PREMATURE_CLOSE')
    return 'connection_reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA') return 'dns';
  if (TLS_CODES.test(code)) return 'tls';
  if (code === 'ERR_INVALID_URL') return 'invalid_url';
  // Node's parser could not read the answer (HPE_HEADER_OVERFLOW: headers over its 16 KiB).
  if (code.startsWith('HPE_')) return 'invalid_answer';
  return 'network';
}
