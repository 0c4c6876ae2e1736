import type { Request, Router } from 'express';
import type { Refusal } from '../actions.ts';
import { actor, type PageContext, type SignedIn } from '../context.ts';
import { notice } from '../notices.ts';
import type { Banner } from '../views/layout.ts';
import { overviewPage } from '../views/overview-page.ts';
import type { WebhookDraft } from '../views/webhook-form.ts';

/** The overview: the agency's keys and webhooks, and the forms that add one. */
async function renderOverview(
  { settings, options }: PageContext,
  req: Request,
  res: SignedIn,
  status = 200,
  banner: Banner = {},
  draft?: WebhookDraft,
) {
  const user = res.locals.user;
  const [keys, webhooks, successRates] = await Promise.all([
    settings.listKeys(actor(res), user.agencyId),
    settings.listWebhooks(actor(res), user.agencyId),
    settings.successRates(actor(res), user.agencyId),
  ]);
  res
    .status(status)
    .type('html')
    .send(
      overviewPage(user, {
        keys,
        webhooks,
        successRates,
        draft,
        localUrls: options.allowPrivateNetworks ?? false,
        notice: notice(req),
        ...banner,
      }),
    );
}

/** A refused action of a form on the overview shows the overview again (with what was typed). */
export const onOverview =
  (ctx: PageContext, draft?: (req: Request) => WebhookDraft): Refusal =>
  (req, res, status, banner) =>
    renderOverview(ctx, req, res, status, banner, draft?.(req));

export function addOverviewRoutes(router: Router, ctx: PageContext): void {
  router.get('/', (req, res, next) => renderOverview(ctx, req, res as SignedIn).catch(next));
}
