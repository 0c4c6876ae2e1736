import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { API_KEY_PATTERN, hashApiKey, type KeyCredentials } from '@trips/db';
import { ApiError } from '../errors.ts';
import type { CredentialsCache } from './credentials-cache.ts';

/** What a request knows about its caller once authenticated. */
export interface Caller {
  keyId: string;
  agencyId: string;
  scopes: ReadonlySet<string>;
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

function subscriptionActive(c: KeyCredentials, now: Date): boolean {
  if (c.subscriptionStatus === 'active') return true;
  return c.subscriptionStatus === 'trialing' && (c.trialEndsAt === null || c.trialEndsAt > now);
}

/**
 * The first three checks of D1, in its order: 401 unauthorized → 403 api_not_enabled →
 * 403 subscription_inactive. A malformed key is refused before any lookup.
 */
export function authenticate(cache: CredentialsCache, onUse: (keyId: string) => void): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const key = BEARER.exec(req.headers.authorization ?? '')?.[1];
    if (!key || !API_KEY_PATTERN.test(key)) {
      return next(new ApiError('unauthorized', 'Provide a valid API key: Authorization: Bearer tps_…'));
    }
    cache.get(hashApiKey(key)).then((credentials) => {
      if (!credentials || credentials.revoked) {
        return next(new ApiError('unauthorized', 'This API key does not exist or was revoked.'));
      }
      if (!credentials.apiEnabled) {
        return next(new ApiError('api_not_enabled', 'API access is not enabled for this agency.'));
      }
      if (!subscriptionActive(credentials, new Date())) {
        return next(
          new ApiError('subscription_inactive', "This agency's trial or subscription is not active."),
        );
      }
      req.caller = {
        keyId: credentials.keyId,
        agencyId: credentials.agencyId,
        scopes: new Set(credentials.scopes),
      };
      onUse(credentials.keyId);
      next();
    }, next);
  };
}
