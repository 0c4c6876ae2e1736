import { Router } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import type { Logger } from '@trips/runtime';
import { pageContext, type SettingsPageOptions } from './context.ts';
import { addKeyRoutes } from './routes/keys.ts';
import { addOverviewRoutes } from './routes/overview.ts';
import { addPageSetup } from './routes/page-setup.ts';
import { addRefusals } from './routes/refusals.ts';
import { addShownOnceRoute } from './routes/shown-once.ts';
import { addSessionCheck, addSignInRoutes, addSignOutRoute } from './routes/signing-in.ts';
import { addWebhookSigningRoutes } from './routes/webhook-signing.ts';
import { addDeliveryRoutes, addWebhookRoutes } from './routes/webhooks.ts';

export type { SettingsPageOptions } from './context.ts';

/**
 * The owners' "API settings" page (issue 5) at /settings: sign-in with a session cookie, then
 * keys and webhooks through the settings module, which checks that the user is an owner and
 * audits every change. Every form carries the session's CSRF token. Mounted at /settings, so the
 * API's own requests pass it with one prefix check.
 *
 * Each area adds its routes in turn; the order is the router's: what runs first comes first.
 */
export function settingsPageRouter(
  db: Kysely<Database>,
  logger: Logger,
  options: SettingsPageOptions,
): Router {
  const context = pageContext(db, logger, options);
  const router = Router();

  addPageSetup(router);
  addSignInRoutes(router, context);
  // ---- Everything else needs a session, and every form its token ----
  addSessionCheck(router, context);
  addSignOutRoute(router, context);
  addOverviewRoutes(router, context);
  addKeyRoutes(router, context);
  addShownOnceRoute(router, context);
  addWebhookRoutes(router, context);
  addWebhookSigningRoutes(router, context);
  addDeliveryRoutes(router, context);
  // ---- Anything else, and refusals ----
  addRefusals(router, context);

  return router;
}
