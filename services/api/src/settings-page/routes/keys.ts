import type { Router } from 'express';
import { SCOPES } from '@trips/contracts';
import { SettingsError } from '@trips/settings';
import { actionRunner } from '../actions.ts';
import { actor, type PageContext } from '../context.ts';
import { fields, optionalText } from '../form-fields.ts';
import { onOverview } from './overview.ts';

/** API keys: create one (shown once), change its scopes, revoke it; all from the overview. */
export function addKeyRoutes(router: Router, ctx: PageContext): void {
  const { settings } = ctx;
  const act = actionRunner(ctx.logger);

  router.post(
    '/keys',
    act(async (req, res) => {
      const created = await settings.createKey(actor(res), {
        agencyId: res.locals.user.agencyId,
        scopes: fields(req.body.scopes),
        name: optionalText(req.body.name),
      });
      await ctx.shownOnce.redirectToShow(
        req,
        res,
        { kind: 'key', prefix: created.prefix, scopes: created.scopes },
        created.key,
      );
    }, onOverview(ctx)),
  );

  router.post(
    '/keys/:id/scopes',
    act(async (req, res) => {
      const wanted = fields(req.body.scopes);
      if (wanted.length === 0) {
        throw new SettingsError('invalid', 'a key keeps at least one scope; to stop a key, revoke it.');
      }
      const id = String(req.params.id);
      const unwanted = SCOPES.filter((s) => !wanted.includes(s));
      await settings.changeKeyScopes(actor(res), id, { add: wanted, remove: unwanted });
      ctx.options.keysChanged?.();
      res.redirect(303, '/settings?notice=scopes-saved');
    }, onOverview(ctx)),
  );

  router.post(
    '/keys/:id/revoke',
    act(async (req, res) => {
      await settings.revokeKey(actor(res), String(req.params.id));
      ctx.options.keysChanged?.();
      res.redirect(303, '/settings?notice=key-revoked');
    }, onOverview(ctx)),
  );
}
