import type { Router } from 'express';
import { actionRunner } from '../actions.ts';
import { actor, type PageContext } from '../context.ts';
import { field } from '../form-fields.ts';
import { onWebhook } from './webhooks.ts';

/** A webhook's ed25519 signatures (D11): switched on, its key rotated, switched off. */
export function addWebhookSigningRoutes(router: Router, ctx: PageContext): void {
  const { settings } = ctx;
  const act = actionRunner(ctx.logger);
  const done = (id: string, notice: string) => `/settings/webhooks/${id}?notice=${notice}#ed25519-heading`;

  router.post(
    '/webhooks/:id/ed25519',
    act(async (req, res) => {
      const id = String(req.params.id);
      await settings.enableEd25519(actor(res), id);
      res.redirect(303, done(id, 'ed25519-on'));
    }, onWebhook(ctx)),
  );

  router.post(
    '/webhooks/:id/ed25519/rotate',
    act(async (req, res) => {
      const id = String(req.params.id);
      const seconds = Number(field(req.body.overlap_seconds) || 'NaN');
      await settings.rotateSigningKey(actor(res), id, { overlapMs: seconds * 1000 });
      res.redirect(303, done(id, 'ed25519-rotated'));
    }, onWebhook(ctx)),
  );

  router.post(
    '/webhooks/:id/ed25519/off',
    act(async (req, res) => {
      const id = String(req.params.id);
      await settings.disableEd25519(actor(res), id);
      res.redirect(303, done(id, 'ed25519-off'));
    }, onWebhook(ctx)),
  );
}
