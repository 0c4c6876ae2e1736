import type { Event } from '../openapi-types.ts';
import { signDelivery } from '../webhooks/sign.ts';

/** The dispatcher's answer time (D9 WEBHOOK_TIMEOUT default): a receiver must cope with it here too. */
const FORWARD_TIMEOUT_MS = 10_000;

export interface Forwarded {
  status: number;
  ms: number;
}

/** A forward that got no 2xx: `message` says what to do about it. */
export class ForwardError extends Error {
  readonly status: number | undefined;
  readonly ms: number;
  constructor(message: string, ms: number, status?: number) {
    super(message);
    this.status = status;
    this.ms = ms;
  }
}

function unreachable(url: string, error: unknown): string {
  const code = (error as { cause?: { code?: string } })?.cause?.code;
  if (code === 'ECONNREFUSED')
    return `nothing is listening at ${url} (connection refused): start your receiver, or point --forward-to at the port it listens on`;
  if (code === 'ENOTFOUND') return `the host of ${url} does not resolve: check --forward-to`;
  return `could not reach ${url}: ${code ?? (error as Error)?.message ?? String(error)}`;
}

/** POSTs `event` to `url` exactly as the dispatcher would: same body, headers and signature (D7). */
export async function forward(url: string, event: Event, secret: string): Promise<Forwarded> {
  const { body, headers } = signDelivery(event, [secret], Math.floor(Date.now() / 1000));
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let response: Response;
  try {
    // Redirects are not followed, as the dispatcher does not follow them.
    response = await fetch(url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    });
    await response.arrayBuffer().catch(() => undefined);
  } catch (error) {
    if ((error as Error)?.name === 'TimeoutError')
      throw new ForwardError(`no answer from ${url} within ${FORWARD_TIMEOUT_MS / 1000} s`, elapsed());
    throw new ForwardError(unreachable(url, error), elapsed());
  }
  const ms = elapsed();
  if (response.status < 200 || response.status > 299)
    throw new ForwardError(
      `${url} answered ${response.status}; the service would retry it`,
      ms,
      response.status,
    );
  return { status: response.status, ms };
}
