import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { API_KEY_PATTERN, type KeyCredentials } from '@trips/db/api-keys';
import { ApiError } from '../errors.ts';
import { keyHashOf, type CredentialsCache } from './credentials-cache.ts';

/** What a request knows about its caller once authenticated. */
export interface Caller {
  readonly keyId: string;
  readonly agencyId: string;
  readonly scopes: ReadonlySet<string>;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's own extension point
  namespace Express {
    interface Request {
      caller?: Caller;
    }
  }
}

export function callerOf(req: Request): Caller {
  if (!req.caller) throw new Error('route mounted without authenticate()');
  return req.caller;
}

const BEARER = /^Bearer +(\S+)$/i;

/**
 * RFC 6750's challenge on every 401, so that a client library knows which scheme to answer with.
 * A request that offered no bearer token gets the bare challenge; one whose token is malformed,
 * unknown or revoked learns it is `invalid_token` (section 3.1).
 */
function challenge(res: Response, offeredToken: boolean): void {
  res.setHeader('WWW-Authenticate', `Bearer realm="api"${offeredToken ? ', error="invalid_token"' : ''}`);
}

/**
 * How many Authorization headers the request carries. Node keeps only the first in `req.headers`,
 * but a request with two is ambiguous (the header is no list, RFC 9110 section 5.3): which key did
 * the client mean, and which would a proxy in front have read?
 */
function authorizationHeaders(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++;
  }
  return count;
}

function subscriptionActive(c: KeyCredentials): boolean {
  if (c.subscriptionStatus === 'active') return true;
  return (
    c.subscriptionStatus === 'trialing' && (c.trialEndsAt === null || c.trialEndsAt.getTime() > Date.now())
  );
}

/**
 * The first three checks of D1, in its order: 401 unauthorized → 403 api_not_enabled →
 * 403 subscription_inactive. A malformed key is refused before any lookup. Before them, a request
 * with two Authorization headers is a 400 invalid_request naming the header, as a request Node
 * cannot read is: it has no one key to check.
 *
 * A key whose credentials are cached is decided synchronously, and its Caller (with the scopes
 * as a Set) is made once per loaded credentials and shared, frozen, by the requests that use it:
 * a promise and a new Set per request were a measurable part of the API's cost.
 */
export function authenticate(cache: CredentialsCache, onUse: (keyId: string) => void): RequestHandler {
  const callers = new WeakMap<KeyCredentials, Caller>();
  const callerFor = (credentials: KeyCredentials): Caller => {
    let caller = callers.get(credentials);
    if (!caller) {
      caller = Object.freeze({
        keyId: credentials.keyId,
        agencyId: credentials.agencyId,
        scopes: new Set(credentials.scopes),
      });
      callers.set(credentials, caller);
    }
    return caller;
  };
  const admit = (
    req: Request,
    res: Response,
    credentials: KeyCredentials | undefined,
    next: NextFunction,
  ) => {
    if (!credentials || credentials.revoked) {
      challenge(res, true);
      return next(new ApiError('unauthorized', 'This API key does not exist or was revoked.'));
    }
    if (!credentials.apiEnabled) {
      return next(new ApiError('api_not_enabled', 'API access is not enabled for this agency.'));
    }
    if (!subscriptionActive(credentials)) {
      return next(
        new ApiError('subscription_inactive', "This agency's trial or subscription is not active."),
      );
    }
    req.caller = callerFor(credentials);
    onUse(credentials.keyId);
    next();
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const headers = authorizationHeaders(req.rawHeaders);
    if (headers > 1) {
      return next(
        new ApiError(
          'invalid_request',
          `Send one Authorization header; this request has ${headers}.`,
          'Authorization',
        ),
      );
    }
    const key = BEARER.exec(req.headers.authorization ?? '')?.[1];
    if (!key || !API_KEY_PATTERN.test(key)) {
      challenge(res, key !== undefined);
      return next(new ApiError('unauthorized', 'Provide a valid API key: Authorization: Bearer tps_…'));
    }
    const credentials = cache.get(keyHashOf(key));
    if (credentials instanceof Promise) credentials.then((found) => admit(req, res, found, next), next);
    else admit(req, res, credentials, next);
  };
}
