import type { Router } from 'express';
import { standardWebhooksSecret } from '@trips/contracts/webhook-signing';
import type { PageContext, SignedIn } from '../context.ts';
import { html, time, type SafeHtml } from '../html.ts';
import type { ShownOnceAbout } from '../shown-once.ts';
import { messagePage, shownOncePage } from '../views/message-pages.ts';

/** The words around each kind of value shown once, and where the owner goes next. */
function presentation(about: ShownOnceAbout) {
  switch (about.kind) {
    case 'key':
      return {
        title: 'Your new API key',
        label: `API key ${about.prefix}…`,
        explanation: html`<p>
          Send it as <code>Authorization: Bearer …</code>. Scopes: ${about.scopes.join(', ')}. We keep only a
          hash of it: if it is lost, revoke it and create another.
        </p>`,
        back: '/settings',
      };
    case 'webhook':
      return {
        title: 'Your new webhook',
        label: 'Signing secret',
        explanation: html`<p>
          Verify each delivery’s <code>Service-Signature</code> with it, or its
          <code>webhook-signature</code> (see the <a href="/docs#webhooks">webhooks guide</a>). Deliveries to
          <code>${about.url}</code> start with the next event.
        </p>`,
        back: `/settings/webhooks/${about.webhookId}`,
      };
    case 'rotated':
      return {
        title: 'Your new signing secret',
        label: 'Signing secret',
        explanation: html`<p>
          The previous secret keeps signing until ${time(new Date(about.previousExpireAt))}: until then each
          delivery carries a signature for each, in both headers, so switch your endpoint to the new one
          before.
        </p>`,
        back: `/settings/webhooks/${about.webhookId}`,
      };
  }
}

/**
 * A webhook secret also in the form the Standard Webhooks libraries take (D11): the same 32
 * bytes in standard base64, where the secret itself is in base64url (docs/webhooks.md, "Secrets").
 */
const standardForm = (secret: string): { label: string; value: string; hint: SafeHtml } => ({
  label: 'The same secret for Standard Webhooks libraries',
  value: standardWebhooksSecret(secret),
  hint: html`The same secret in the form the Standard Webhooks libraries take (standard base64), to verify the
    <code>webhook-signature</code> header with one of them:`,
});

/** The one page that shows a new key or secret, once (post/redirect/get; shown-once.ts). */
export function addShownOnceRoute(router: Router, { shownOnce }: PageContext): void {
  router.get('/shown-once/:id', async (req, res, next) => {
    try {
      const user = (res as SignedIn).locals.user;
      const shown = await shownOnce.take(req, res);
      if (!shown) {
        return res
          .status(410)
          .type('html')
          .send(
            messagePage(
              'Already shown',
              'A new key or signing secret is shown only once, and this one has been shown already. If it was not copied, revoke the key and create another, or rotate the webhook’s secret.',
              user,
            ),
          );
      }
      const alternate = shown.about.kind === 'key' ? undefined : standardForm(shown.value);
      res.type('html').send(
        shownOncePage(user, {
          ...presentation(shown.about),
          value: shown.value,
          ...(alternate && { alternate }),
        }),
      );
    } catch (error) {
      next(error);
    }
  });
}
