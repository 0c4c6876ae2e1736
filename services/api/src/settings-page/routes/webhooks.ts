import type { Request, Router } from 'express';
import { isCalendarTime } from '@trips/runtime';
import { SettingsError } from '@trips/settings';
import { actionRunner, type Refusal } from '../actions.ts';
import { actor, type PageContext, type SignedIn } from '../context.ts';
import { field, fields, optionalText } from '../form-fields.ts';
import { html } from '../html.ts';
import { notice } from '../notices.ts';
import type { Banner } from '../views/layout.ts';
import { shownOncePage } from '../views/message-pages.ts';
import type { WebhookDraft } from '../views/webhook-form.ts';
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
  const [webhook, { attempts }] = await Promise.all([
    settings.getWebhook(actor(res), id),
    settings.listAttempts(actor(res), id, 50),
  ]);
  res
    .status(status)
    .type('html')
    .send(
      webhookPage(res.locals.user, {
        webhook,
        attempts,
        retention,
        draft,
        notice: notice(req),
        ...banner,
      }),
    );
}

/** A refused action of a form on a webhook's page shows that page again (with what was typed). */
const onWebhook =
  (ctx: PageContext, draft?: (req: Request) => WebhookDraft): Refusal =>
  (req, res, status, banner) =>
    renderWebhook(ctx, req, res, status, banner, draft?.(req));
const webhookDraft = (req: Request): WebhookDraft => ({
  url: field(req.body.url),
  description: field(req.body.description),
  events: fields(req.body.events),
});

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
      });
      res.type('html').send(
        shownOncePage(res.locals.user, {
          title: 'Your new webhook',
          label: 'Signing secret',
          value: secret,
          explanation: html`<p>
            Verify each delivery’s <code>Service-Signature</code> with it (see the webhooks guide). Deliveries
            to <code>${webhook.url}</code> start with the next event.
          </p>`,
          back: `/settings/webhooks/${webhook.id}`,
        }),
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
      res.type('html').send(
        shownOncePage(res.locals.user, {
          title: 'Your new signing secret',
          label: 'Signing secret',
          value: rotated.secret,
          explanation: html`<p>
            The previous secret keeps signing until ${rotated.previous_secrets_expire_at.toISOString()}: until
            then each delivery carries a <code>v1=</code> signature for each, so switch your endpoint to the
            new one before.
          </p>`,
          back: `/settings/webhooks/${id}`,
        }),
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
}
