import type { RequestHandler } from 'express';
import type { Scope } from '@trips/contracts';
import { ApiError } from '../errors.ts';
import { refuseControlCharacters } from '../http/control-characters.ts';
import { enforceRateLimit } from '../rate-limit/middleware.ts';
import { callerOf } from './authenticate.ts';

function requireScope(scope: Scope): RequestHandler {
  return (req, _res, next) => {
    if (!callerOf(req).scopes.has(scope)) {
      return next(
        new ApiError('insufficient_scope', `This operation needs the '${scope}' scope on the key.`),
      );
    }
    next();
  };
}

/**
 * The per-route checks of D1 in order once the key is accepted: scope (403), then rate (429), then
 * the one check every parameter gets before a route reads it (400 for a control character).
 */
export const guard = (scope: Scope): RequestHandler[] => [
  requireScope(scope),
  enforceRateLimit,
  refuseControlCharacters,
];
