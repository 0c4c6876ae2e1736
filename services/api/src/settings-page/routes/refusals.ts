import type { NextFunction, Request, Response, Router } from 'express';
import type { SessionUser } from '@trips/db/sessions';
import { SettingsError } from '@trips/settings';
import { redactCredentials } from '../../http/redact.ts';
import type { PageContext } from '../context.ts';
import { messagePage } from '../views/message-pages.ts';

/** After every route: a page that does not exist, and the errors the routes passed on. */
export function addRefusals(router: Router, { logger }: PageContext): void {
  router.use((req, res) => {
    res
      .status(404)
      .type('html')
      .send(messagePage('Not found', 'There is no such page in API settings.', res.locals.user));
  });

  router.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const user = res.locals.user as SessionUser | undefined;
    // Another agency's object answers as a missing one (the module says not_found for both).
    if (error instanceof SettingsError && error.code === 'not_found') {
      return res
        .status(404)
        .type('html')
        .send(messagePage('Not found', 'There is no such key or webhook in your agency.', user));
    }
    if (error instanceof SettingsError && error.code === 'forbidden') {
      return res
        .status(403)
        .type('html')
        .send(
          messagePage(
            'Owners only',
            'Only an owner of the agency manages its API keys and webhooks. Ask an owner of your agency.',
            user,
          ),
        );
    }
    const status = (error as { status?: number }).status ?? 0;
    if (status >= 400 && status < 500) {
      // The body parser's refusals: a form too large or unreadable.
      return res
        .status(status)
        .type('html')
        .send(messagePage('Bad form', 'The form could not be read.', user));
    }
    logger.error(
      {
        err: error,
        requestId: res.getHeader('Request-Id'),
        path: redactCredentials(_req.baseUrl + _req.path),
      },
      'settings page error',
    );
    res
      .status(500)
      .type('html')
      .send(
        messagePage(
          'Something went wrong',
          'Something went wrong on our side; nothing may have changed. Please try again later.',
          user,
        ),
      );
  });
}
