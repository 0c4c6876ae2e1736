import { setImmediate as nextTurn } from 'node:timers/promises';
import type { LookupFunction } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Agent } from 'undici';
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
/** Connections kept to one origin at most (the endpoint cap keeps it far lower), as https.Agent's maxSockets was. */
const CONNECTIONS_PER_ORIGIN = 256;
/** An idle connection is closed after this, or sooner when the receiver's Keep-Alive says so. */
const IDLE_MS = 60_000;

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
 * undici's Agent (the client behind Node's fetch) rather than Node's https.request: the same
 * attempt costs clearly less CPU per delivery (bench:dispatcher's throughput part, figures in
 * docs/benchmarks/dispatcher.md), and used as here it adds nothing an attempt must not do: it
 * follows no redirects and retries nothing unless given interceptors for them. got, tried before,
 * cost more CPU per delivery than everything else the dispatcher does for it.
 */
export class Sender {
  private readonly agent: Agent;
  private readonly guard: SsrfGuard;
  private readonly timeoutMs: number;

  constructor(options: SenderOptions) {
    this.guard = createSsrfGuard({ allowPrivateNetworks: options.allowPrivateNetworks });
    this.timeoutMs = options.timeoutMs;
    // The extra CA goes into one TLS context made here, not into options that every connection
    // turns into a context of its own (the system's ~120 roots plus ours, parsed per handshake).
    // Trusted: the system's roots and the extra CA.
    const secureContext = options.ca
      ? createSecureContext({ ca: [...rootCertificates, options.ca] })
      : undefined;
    this.agent = deliveryAgent({ timeoutMs: options.timeoutMs, lookup: this.guard.lookup, secureContext });
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
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new AttemptTimeout(this.timeoutMs)), this.timeoutMs);
    try {
      // An IP literal is connected to without a lookup: checked here. A name is checked by the
      // guard's lookup, on the very addresses the connection then uses.
      this.guard.checkUrl(url);
      // The signal ends the attempt wherever it is: waiting for a connection, for the status line,
      // or for the body (then the connection is closed, which readPrefix's grace also does).
      const response = await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': USER_AGENT,
          'service-event-id': request.event.id,
          'service-event-type': request.event.type,
          ...signing,
        },
        body,
        signal: timeout.signal,
        responseHeaders: 'raw',
      });
      // `responseHeaders: 'raw'`: name, value, name, value… as they came, not the parsed object.
      const rawHeaders = response.headers as unknown as string[];
      const { text, cut } = await readPrefix(response.body, BODY_LIMIT, BODY_GRACE_MS);
      const status = response.statusCode;
      const error =
        status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? 'redirect' : 'http_status';
      const result = finish({
        statusCode: status,
        error,
        body: text,
        bodyCut: cut,
        ...(ASKS_TO_WAIT.has(status) && {
          backPressure: { retryAfterMs: retryAfterMs(firstHeader(rawHeaders, 'retry-after'), Date.now()) },
        }),
        signature,
        responseHeaders: headerLines(rawHeaders, BODY_LIMIT),
      });
      // undici gives a connection whose answer has ended back to its pool one event-loop turn
      // later (client-h1.js: in case the receiver closes it after all). An attempt started before
      // then, as the endpoint's next delivery taking this one's slot is, would open a connection of
      // its own; returned after that turn, it finds this one free, as it did with https.Agent.
      await nextTurn();
      return result;
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
    }
  }

  close(): void {
    void this.agent.destroy();
  }
}

/**
 * The client every attempt is sent with. bench:dispatcher's bare consumer sends with it too
 * (test/bench/bare-post.ts), so the floor it is measured against uses the very same client.
 *
 * One Pool per origin, made on its first delivery and dropped by the Agent once its last
 * connection has closed, so a dispatcher that talks to many webhooks holds pools only for those
 * with a connection open. Keep-alive: a busy endpoint gets its deliveries over a few warm
 * connections instead of a TLS handshake each; idle ones are closed so a dead endpoint holds
 * nothing. undici gives `connect` to tls.connect as it is, so `lookup` is the SSRF guard's: names
 * are checked on the very addresses connected to (IP literals, which skip the lookup, by checkUrl
 * in send). HTTP/1.1 only, as node:https spoke: no ALPN probe of each new origin.
 */
export function deliveryAgent(options: {
  timeoutMs: number;
  lookup: LookupFunction;
  secureContext?: SecureContext;
}): Agent {
  return new Agent({
    connections: CONNECTIONS_PER_ORIGIN,
    pipelining: 1,
    allowH2: false,
    keepAliveTimeout: IDLE_MS,
    keepAliveMaxTimeout: IDLE_MS,
    // An attempt that cannot connect within its time is over; its socket must not outlive it.
    connectTimeout: options.timeoutMs,
    connect: {
      lookup: options.lookup,
      ...(options.secureContext && { secureContext: options.secureContext }),
    },
  });
}

/** The first value of a header among raw `name, value` pairs (a repeated Retry-After: the first, as Node keeps). */
function firstHeader(raw: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) return raw[i + 1];
  return undefined;
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
 * so the grace never outlasts it. A body cut off keeps what arrived; its connection is closed
 * (undici aborts a request whose body is destroyed unread), a whole one goes back to the pool.
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

/**
 * undici's own codes for what Node's http names otherwise, given as Node's: the attempts log and
 * the owners' words (attempt-words.ts) know Node's codes, and rows recorded before undici hold them.
 */
const NODE_CODE_OF: Record<string, string> = {
  // The peer closed the connection before a complete answer ("other side closed"): Node's "socket hang up".
  UND_ERR_SOCKET: 'ECONNRESET',
  UND_ERR_HEADERS_OVERFLOW: 'HPE_HEADER_OVERFLOW',
  UND_ERR_CONNECT_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_HEADERS_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_BODY_TIMEOUT: 'ETIMEDOUT',
};

const errorCodeOf = (error: unknown): string => {
  const e = error as { name?: string; message?: string; code?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  // undici 8.13's parser errors lose llhttp's code (it looks the number up in the name → number
  // table); its reason, as in "… HTTP/1.1 protocol (Invalid status code)", is kept instead.
  if (!code && e.name === 'HTTPParserError')
    return `HPE ${/\(([^)]*)\)$/.exec(e.message ?? '')?.[1] ?? ''}`.trim();
  return NODE_CODE_OF[code] ?? code;
};

const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH|ERR_OSSL)/;

/** Maps what Node, undici and the SSRF guard throw to the error classes owners see. */
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
  // The parser could not read the answer (HPE_HEADER_OVERFLOW: headers over Node's 16 KiB, which
  // undici takes as its limit too).
  if (code.startsWith('HPE')) return 'invalid_answer';
  return 'network';
}
