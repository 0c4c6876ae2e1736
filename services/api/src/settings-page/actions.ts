import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '@trips/runtime';
import { SettingsError } from '@trips/settings';
import { redactCredentials } from '../http/redact.ts';
import type { SignedIn } from './context.ts';
import type { Banner } from './views/layout.ts';

/** Re-renders the page of a refused action's form, with the refusal's status and message. */
export type Refusal = (req: Request, res: SignedIn, status: number, banner: Banner) => Promise<void>;

/**
 * Runs an action. Bad input (400), or a broker that is not there (503), re-renders the form's
 * page with the module's message; the module has changed nothing.
 */
export const actionRunner =
  (logger: Logger) =>
  (work: (req: Request, res: SignedIn) => Promise<void>, refuse: Refusal) =>
  async (req: Request, res: Response, next: NextFunction) => {
    try {
      await work(req, res as SignedIn);
    } catch (error) {
      if (!(error instanceof SettingsError) || (error.code !== 'invalid' && error.code !== 'unavailable')) {
        return next(error);
      }
      const unavailable = error.code === 'unavailable';
      // What is missing (a broker's host name, a queue's name) is for the platform team's logs,
      // not for an agency's owner (D1: no internal host name in an answer).
      if (unavailable)
        logger.warn(
          { err: error, path: redactCredentials(req.baseUrl + req.path) },
          'settings action unavailable',
        );
      const message = unavailable
        ? 'Deliveries cannot be queued right now: our delivery service is unreachable. Nothing was sent; try again later.'
        : error.message;
      await refuse(req, res as SignedIn, unavailable ? 503 : 400, { error: message }).catch(next);
    }
  };
