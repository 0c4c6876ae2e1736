import { TripServiceError } from './errors.ts';
import type { ApiErrorBody } from './openapi-types.ts';
import { backoffMs, sleep } from './retry.ts';
import { VERSION } from './version.ts';

export interface ClientOptions {
  /** A key of the agency (`tps_…`), from its API settings. */
  apiKey: string;
  /**
   * Where the API is, without `/api/v1`: `https://trips.example`. Default: the environment's
   * `TRIPS_BASE_URL` when it is set, else `http://localhost:3000` (the API run locally), as for
   * the `trips` command.
   */
  baseUrl?: string;
  /** Milliseconds one attempt may take, answer body included. Default 30 s. */
  timeout?: number;
  /** Retries after a 429, a 5xx, a timeout or a network error (never a 4xx). Default 2. */
  maxRetries?: number;
}

/** Per call: an AbortSignal, and the client's timeout and retries overridden. */
export interface RequestOptions {
  signal?: AbortSignal;
  timeout?: number;
  maxRetries?: number;
}

export type Query = Record<string, string | number | readonly string[] | undefined>;

/** A Retry-After beyond this is not waited out in a call: the caller hears of it instead. */
const MAX_RETRY_AFTER_SECONDS = 60;

/** A key is `tps_` and base62 characters (D4): anything else is a paste gone wrong. */
const KEY_CHARACTERS = /^[0-9A-Za-z_]+$/;

/**
 * What is said of a key with other characters. Never the key itself: a line break or a space
 * pasted with it would otherwise come back in an error about the Authorization header, whole.
 */
export const INVALID_KEY = 'the API key is not valid (it holds characters a key never has)';

export const isWellFormedKey = (key: string): boolean => KEY_CHARACTERS.test(key);

/** Where the API is when no baseUrl is given: TRIPS_BASE_URL when set, else the local API. */
export function defaultBaseUrl(): string {
  return (typeof process === 'undefined' ? undefined : process.env.TRIPS_BASE_URL) || 'http://localhost:3000';
}

/** A timeout of ours, told apart from the caller's own abort. */
class AttemptTimeout extends Error {}

/** The transport every resource shares: GET with auth, timeouts, retries and D1 errors. */
export class HttpClient {
  private readonly apiKey: string;
  private readonly baseUrl: string;
  private readonly timeout: number;
  private readonly maxRetries: number;

  constructor(options: ClientOptions) {
    if (!options || typeof options.apiKey !== 'string' || options.apiKey === '')
      throw new TypeError('TripService: apiKey is required (a key from the agency’s API settings, tps_…).');
    if (!isWellFormedKey(options.apiKey)) throw new TypeError(`TripService: ${INVALID_KEY}.`);
    const baseUrl = options.baseUrl ?? defaultBaseUrl();
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new TypeError(`TripService: baseUrl must be an absolute http(s) URL; got ${String(baseUrl)}.`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new TypeError(`TripService: baseUrl must be http or https; got ${url.protocol}.`);
    this.apiKey = options.apiKey;
    this.baseUrl = url.toString().replace(/\/+$/, '');
    this.timeout = options.timeout ?? 30_000;
    this.maxRetries = options.maxRetries ?? 2;
  }

  url(path: string, query: Query = {}): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined) continue;
      search.set(name, Array.isArray(value) ? value.join(',') : String(value));
    }
    const qs = search.toString();
    return `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
  }

  async get<T>(path: string, query?: Query, options: RequestOptions = {}): Promise<T> {
    const url = this.url(path, query);
    const maxRetries = options.maxRetries ?? this.maxRetries;
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      let error: TripServiceError;
      try {
        return await this.attempt<T>(url, options.timeout ?? this.timeout, options.signal);
      } catch (caught) {
        if (!(caught instanceof TripServiceError)) throw caught; // the caller's abort
        error = caught;
      }
      const wait = this.retryDelay(error, attempt);
      if (attempt >= maxRetries || wait === undefined) throw error;
      await sleep(wait, options.signal);
    }
  }

  /** How long to wait before retrying after `error`, or undefined when it must not be retried. */
  private retryDelay(error: TripServiceError, attempt: number): number | undefined {
    if (error.status === 429) {
      const seconds = error.retryAfterSeconds ?? 1;
      return seconds > MAX_RETRY_AFTER_SECONDS ? undefined : seconds * 1000;
    }
    const transient = error.status >= 500 || error.code === 'connection_error' || error.code === 'timeout';
    return transient ? backoffMs(attempt) : undefined;
  }

  private async attempt<T>(url: string, timeoutMs: number, signal?: AbortSignal): Promise<T> {
    // AbortSignal.any is Node 20.3+; the package promises 18, so the two are joined by hand.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new AttemptTimeout()), timeoutMs);
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await fetch(url, {
        headers: {
          authorization: `Bearer ${this.apiKey}`,
          accept: 'application/json',
          'user-agent': `trips-sdk-node/${VERSION}`,
        },
        signal: controller.signal,
      });
      const text = await response.text();
      if (response.ok) return parseBody<T>(text, response);
      throw apiError(response, text);
    } catch (error) {
      if (error instanceof TripServiceError) throw error;
      if (signal?.aborted) throw signal.reason;
      if (controller.signal.reason instanceof AttemptTimeout)
        throw new TripServiceError({
          status: 0,
          code: 'timeout',
          message: `No answer from ${url} within ${timeoutMs} ms.`,
        });
      throw new TripServiceError({
        status: 0,
        code: 'connection_error',
        message: `Could not reach ${url}: ${describe(error)}.`,
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** fetch's "fetch failed" hides the reason (ECONNREFUSED …) in `cause`. */
function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
}

function parseBody<T>(text: string, response: Response): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new TripServiceError({
      status: response.status,
      code: 'invalid_response',
      message: `The API answered ${response.status} with a body that is not JSON.`,
      requestId: response.headers.get('request-id') ?? undefined,
    });
  }
}

function apiError(response: Response, text: string): TripServiceError {
  const requestId = response.headers.get('request-id') ?? undefined;
  const retryAfter = Number(response.headers.get('retry-after'));
  let body: Partial<ApiErrorBody> | undefined;
  try {
    body = JSON.parse(text) as Partial<ApiErrorBody>;
  } catch {
    body = undefined;
  }
  const error = body?.error;
  if (!error || typeof error.code !== 'string') {
    // A proxy's page, say: not the API's D1 body, but the status still classifies it.
    return new TripServiceError({
      status: response.status,
      code: response.status >= 500 ? 'internal_error' : 'invalid_response',
      message: `The API answered ${response.status} without an error body.`,
      requestId,
    });
  }
  return new TripServiceError({
    status: response.status,
    code: error.code,
    message: error.message,
    requestId: error.request_id ?? requestId,
    param: error.param,
    retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  });
}
