import type { SessionUser } from '@trips/db/sessions';
import type { PublicKeyView } from '@trips/settings';
import { html, time } from '../html.ts';
import { csrfField } from './layout.ts';
import { overlapSelect } from './overlap-choices.ts';

/**
 * A webhook's ed25519 signatures (D11), on its page: off, a button to switch them on; on, the
 * public keys signing now (two while a rotation overlaps), a rotation and a switch-off. The keys
 * are public: they are shown whenever the page is, unlike a secret.
 */
export function signingSection(user: SessionUser, webhookId: string, keys: PublicKeyView[]) {
  const action = (path: string) => `/settings/webhooks/${webhookId}/ed25519${path}`;
  const intro = html`<p class="hint">
    Every delivery is signed with the webhook’s secret twice: in <code>Service-Signature</code> and, as the
    Standard Webhooks libraries read it, in <code>webhook-signature</code>. With ed25519 on,
    <code>webhook-signature</code> also carries a <code>v1a</code> signature that your endpoint checks with
    the public key: nothing secret needs to be kept there.
  </p>`;
  if (keys.length === 0)
    return html`<section class="card" aria-labelledby="ed25519-heading">
      <h2 id="ed25519-heading">ed25519 signatures</h2>
      ${intro}
      <p>Off.</p>
      <form method="post" action="${action('')}">
        ${csrfField(user)}
        <div class="actions"><button type="submit" class="secondary">Sign with ed25519 too</button></div>
      </form>
    </section>`;
  return html`<section class="card" aria-labelledby="ed25519-heading">
    <h2 id="ed25519-heading">ed25519 signatures</h2>
    ${intro}
    <dl class="facts">
      ${keys.map((k, i) => {
        const label = i === 0 ? 'Public key' : 'Previous public key';
        const until = k.expires_at ? html`, signs until ${time(k.expires_at)}` : '';
        return html`<dt>${label}</dt>
          <dd>
            <output class="mono" aria-label="${label}">${k.public_key}</output><br />
            made ${time(k.created_at)}${until}
          </dd>`;
      })}
    </dl>
    <form method="post" action="${action('/rotate')}">
      ${csrfField(user)}
      <label for="key-overlap">Keep the current key signing for</label>
      <p class="hint" id="key-overlap-hint">
        During the overlap each delivery carries a <code>v1a</code> signature for each key, so your endpoint
        can take the new public key without losing a delivery.
      </p>
      ${overlapSelect('key-overlap', 'key-overlap-hint')}
      <div class="actions"><button type="submit" class="secondary">Rotate key</button></div>
    </form>
    <form method="post" action="${action('/off')}">
      ${csrfField(user)}
      <p class="hint">
        Switched off, the next delivery carries no <code>v1a</code>: an endpoint that checks only it refuses
        them.
      </p>
      <div class="actions"><button type="submit" class="danger">Switch ed25519 off</button></div>
    </form>
  </section>`;
}
