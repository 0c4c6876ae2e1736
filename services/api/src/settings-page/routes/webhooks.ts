import type { Request, Router } from 'express';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { isCalendarTime } from '@trips/runtime';
import { parseRateLimit, SettingsError } from '@trips/settings';
import { actionRunner, type Refusal } from '../actions.ts';
import { actor, type PageContext, type SignedIn } from '../context.ts';
import { field, fields, optionalText } from '../form-fields.ts';
import { notice } from '../notices.ts';
import type { Banner } from '../views/layout.ts';
import { ALL_EVENTS, type WebhookDraft } from '../views/webhook-form.ts';
import { attemptPage } from '../views/attempt-page.ts';
import { webhookPage } from '../views/webhook-page.ts';
import { onOverview } from './overview.ts';

/** A webhook's page: its state, its delivery log and the forms that change it. */
async function renderWebhook(
  { settings, retention }: PageContext,
  req: Request,
  res: SignedIn,
  status = 200,
  banner: Banner = {},
  draft?: WebhookDraft,
) {
  const id = String(req.params.id);
  const log = logView(req);
  const [webhook, page, health] = await Promise.all([
    settings.getWebhook(actor(res), id),
    settings.listAttempts(actor(res), id, {
      limit: 50,
      failedOnly: log.failedOnly,
      ...(log.before !== undefined && { before: log.before }),
    }),
    settings.webhookHealth(actor(res), id),
  ]);
  res
    .status(status)
    .type('html')
    .send(
      webhookPage(res.locals.user, {
        webhook,
        log: { ...log, attempts: page.attempts, nextBefore: page.next_before },
        lastFailureReason: page.last_failure_reason,
        health,
        retention,
        draft,
        notice: notice(req),
        ...banner,
      }),
    );
}

/** Which page of the delivery log the query asks for: `?log=failed` and `before=<attempt>`. */
function logView(req: Request): { failedOnly: boolean; before?: number } {
  const before = field(req.query.before);
  return {
    failedOnly: field(req.query.log) === 'failed',
    ...(/^[1-9]\d{0,14}$/.test(before) && { before: Number(before) }),
  };
}

/** A refused action of a form on a webhook's page shows that page again (with what was typed). */
export const onWebhook =
  (ctx: PageContext, draft?: (req: Request) => WebhookDraft): Refusal =>
  (req, res, status, banner) =>
    renderWebhook(ctx, req, res, status, banner, draft?.(req));
const webhookDraft = (req: Request): WebhookDraft => {
  const events = fields(req.body.events);
  return {
    url: field(req.body.url),
    description: field(req.body.description),
    events: events.includes(ALL_EVENTS) ? [...EVENT_TYPE_NAMES] : events,
    // A post without the field leaves the limit as it is.
    ...(req.body.rate_limit !== undefined && { rateLimit: field(req.body.rate_limit) }),
  };
};

/** Webhooks: add one (its secret shown once), its page, change it, switch it, rotate its secret. */
export function addWebhookRoutes(router: Router, ctx: PageContext): void {
  const { settings } = ctx;
  const act = actionRunner(ctx.logger);
  // The add and the change forms, refused, come back with what was typed in them.
  const onAddForm = onOverview(ctx, webhookDraft);
  const onChangeForm = onWebhook(ctx, webhookDraft);

  router.post(
    '/webhooks',
    act(async (req, res) => {
      const draft = webhookDraft(req);
      const { webhook, secret } = await settings.createWebhook(actor(res), {
        agencyId: res.locals.user.agencyId,
        url: draft.url ?? '',
        eventTypes: draft.events ?? [],
        description: optionalText(req.body.description),
        rateLimit: parseRateLimit(draft.rateLimit ?? ''),
      });
      await ctx.shownOnce.redirectToShow(
        req,
        res,
        { kind: 'webhook', webhookId: webhook.id, url: webhook.url },
        secret,
      );
    }, onAddForm),
  );

  router.get('/webhooks/:id', (req, res, next) => renderWebhook(ctx, req, res as SignedIn).catch(next));

  router.post(
    '/webhooks/:id',
    act(async (req, res) => {
      const draft = webhookDraft(req);
      const id = String(req.params.id);
      await settings.updateWebhook(actor(res), id, {
        url: draft.url,
        eventTypes: draft.events,
        description: optionalText(req.body.description),
        rateLimit: draft.rateLimit === undefined ? undefined : parseRateLimit(draft.rateLimit),
      });
      res.redirect(303, `/settings/webhooks/${id}?notice=webhook-updated`);
    }, onChangeForm),
  );

  for (const [path, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    router.post(
      `/webhooks/:id/${path}`,
      act(async (req, res) => {
        const id = String(req.params.id);
        await settings.setWebhookEnabled(actor(res), id, enabled);
        res.redirect(303, `/settings/webhooks/${id}?notice=webhook-${path}d`);
      }, onWebhook(ctx)),
    );
  }

  router.post(
    '/webhooks/:id/rotate-secret',
    act(async (req, res) => {
      const seconds = Number(field(req.body.overlap_seconds) || 'NaN');
      const id = String(req.params.id);
      const rotated = await settings.rotateSecret(actor(res), id, { overlapMs: seconds * 1000 });
      await ctx.shownOnce.redirectToShow(
        req,
        res,
        {
          kind: 'rotated',
          webhookId: id,
          previousExpireAt: rotated.previous_secrets_expire_at.toISOString(),
        },
        rotated.secret,
      );
    }, onWebhook(ctx)),
  );
}

/** A webhook's deliveries on demand: a test event, and the events since a time sent again. */
export function addDeliveryRoutes(router: Router, ctx: PageContext): void {
  const { settings } = ctx;
  const act = actionRunner(ctx.logger);

  router.post(
    '/webhooks/:id/test',
    act(async (req, res) => {
      const id = String(req.params.id);
      await settings.sendTestEvent(actor(res), id);
      res.redirect(303, `/settings/webhooks/${id}?notice=test-sent`);
    }, onWebhook(ctx)),
  );

  router.post(
    '/webhooks/:id/redeliver',
    act(async (req, res) => {
      const id = String(req.params.id);
      const since = field(req.body.since);
      // datetime-local has no zone; the form says it is UTC.
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(since) || !isCalendarTime(since)) {
        throw new SettingsError('invalid', 'give the time to redeliver from, as a date and a time (UTC).');
      }
      await settings.redeliver(actor(res), id, { since: new Date(`${since}Z`) });
      res.redirect(303, `/settings/webhooks/${id}?notice=redelivered`);
    }, onWebhook(ctx)),
  );

  router.get('/webhooks/:id/attempts/:attempt', (req, res, next) =>
    renderAttempt(ctx, req, res as SignedIn).catch(next),
  );

  router.post(
    '/webhooks/:id/attempts/:attempt/send-again',
    act(async (req, res) => {
      const id = String(req.params.id);
      const { attempt } = await settings.getAttempt(actor(res), id, attemptNumber(req));
      await settings.resendEvent(actor(res), id, attempt.event_id);
      res.redirect(303, `/settings/webhooks/${id}/attempts/${attempt.id}?notice=sent-again`);
    }, onAttempt(ctx)),
  );
}

/** The attempt's number in the path; one that is not a number is no attempt (404). */
const attemptNumber = (req: Request) => {
  const value = String(req.params.attempt);
  return /^[1-9]\d{0,14}$/.test(value) ? Number(value) : 0;
};

/** One attempt in full: the request as sent, the answer, and "send this event again". */
async function renderAttempt(
  { settings }: PageContext,
  req: Request,
  res: SignedIn,
  status = 200,
  banner: Banner = {},
) {
  const detail = await settings.getAttempt(actor(res), String(req.params.id), attemptNumber(req));
  res
    .status(status)
    .type('html')
    .send(attemptPage(res.locals.user, { ...detail, notice: notice(req), ...banner }));
}

const onAttempt =
  (ctx: PageContext): Refusal =>
  (req, res, status, banner) =>
    renderAttempt(ctx, req, res, status, banner);
