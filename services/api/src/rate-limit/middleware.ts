import type { RequestHandler, Response } from 'express';
import { atMostEvery, type Logger } from '@trips/runtime';
import { callerOf } from '../auth/authenticate.ts';
import { ApiError } from '../errors.ts';
import type { RateLimitDecision, TokenBucketStore } from './token-bucket.ts';

const decisionOf = (res: Response) => res.locals.rateLimit as RateLimitDecision | undefined;

/**
 * Takes a token for every request of an accepted key and sets the RateLimit headers (D3), but
 * does not refuse yet: D1 ranks 403 insufficient_scope before 429, so the refusal waits for
 * `enforceRateLimit` after the scope check.
 *
 * If the shared store is unreachable the request goes through without headers: losing Redis
 * should not take the whole API down with it. The warning is logged at most once a minute.
 */
export function takeRateLimitToken(store: TokenBucketStore, logger: Logger): RequestHandler {
  const warningDue = atMostEvery(60_000);
  const apply = (res: Response, decision: RateLimitDecision) => {
    res.locals.rateLimit = decision;
    res.setHeader('RateLimit-Limit', decision.limit);
    res.setHeader('RateLimit-Remaining', decision.remaining);
    res.setHeader('RateLimit-Reset', decision.resetSeconds);
  };
  return (req, res, next) => {
    const decision = store.take(callerOf(req).keyId);
    // Most requests are decided from this replica's lease, without waiting for anything.
    if (!(decision instanceof Promise)) {
      apply(res, decision);
      return next();
    }
    decision.then(
      (decided) => {
        apply(res, decided);
        next();
      },
      (error: unknown) => {
        if (warningDue()) {
          logger.warn({ err: error }, 'rate limit store unreachable: letting requests through');
        }
        next();
      },
    );
  };
}

export const enforceRateLimit: RequestHandler = (_req, res, next) => {
  const decision = decisionOf(res);
  if (decision && !decision.allowed) {
    res.setHeader('Retry-After', decision.retryAfterSeconds);
    return next(
      new ApiError('rate_limited', `Too many requests. Retry after ${decision.retryAfterSeconds} s.`),
    );
  }
  next();
};
