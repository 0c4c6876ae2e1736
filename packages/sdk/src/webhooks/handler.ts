import type { IncomingMessage, ServerResponse } from 'node:http';
import { WebhookVerificationError } from '../errors.ts';
import type { Event } from '../openapi-types.ts';
import { keyList, verifyWebhook, type VerifyOptions } from './verify.ts';

export interface WebhookHandlerOptions extends VerifyOptions {
  /**
   * The webhook's secret (whsec_…, either form API settings shows) or its ed25519 public key
   * (whpk_…), or during a rotation both.
   */
  secrets: string | readonly string[];
  /**
   * Called with each verified event before the answer: resolve and the delivery is answered 200,
   * reject and it is answered 500, so the service retries it. Keep it short (10 s at most).
   */
  onEvent: (event: Event, request: IncomingMessage) => unknown;
  /** Bodies above this many bytes are refused (413). Default 1 MiB; events are far smaller. */
  maxBodyBytes?: number;
}

/** A request as Express leaves it: a body parser may have read the stream into `body`. */
type Request = IncomingMessage & { body?: unknown };
type Next = (error?: unknown) => void;

function readBody(req: Request, limit: number): Promise<Buffer> {
  if (Buffer.isBuffer(req.body) || typeof req.body === 'string')
    return Promise.resolve(Buffer.from(req.body));
  if (req.body !== undefined && req.readableEnded)
    return Promise.reject(
      new WebhookVerificationError(
        'body_not_raw',
        "A body parser already turned the webhook body into an object, and the signature covers the raw bytes. Mount this handler before express.json(), or give its route express.raw({ type: 'application/json' }).",
      ),
    );
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(Object.assign(new Error(`webhook body over ${limit} bytes`), { status: 413 }));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * A request handler for node:http (`createServer(handler)`) and for Express
 * (`app.post('/webhooks', handler)`): reads the raw body itself, verifies it, answers 400 with the
 * failed check on a bad signature, and otherwise calls `onEvent` and answers 200.
 */
export function createWebhookHandler(
  options: WebhookHandlerOptions,
): (req: IncomingMessage, res: ServerResponse, next?: Next) => Promise<void> {
  if (!options || typeof options.onEvent !== 'function')
    throw new TypeError('createWebhookHandler: onEvent must be a function (event) => …');
  keyList(options.secrets); // a missing secret is a setup error: say so at start, not per request
  return async (req, res, next) => {
    let event: Event;
    try {
      const body = await readBody(req as Request, options.maxBodyBytes ?? 1_048_576);
      event = verifyWebhook(body, req.headers, options.secrets, options);
    } catch (error) {
      if (error instanceof WebhookVerificationError && error.reason === 'body_not_raw' && next)
        return next(error);
      if (error instanceof WebhookVerificationError)
        return answer(res, 400, { error: { reason: error.reason, message: error.message } });
      return answer(res, (error as { status?: number }).status ?? 400, {
        error: { message: 'unreadable body' },
      });
    }
    try {
      await options.onEvent(event, req);
    } catch (error) {
      if (next) return next(error);
      return answer(res, 500, { error: { message: 'the receiver failed to process the event' } });
    }
    answer(res, 200, { received: event.id });
  };
}
