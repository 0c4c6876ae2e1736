import type { SessionUser } from '@trips/db/sessions';
import { describeRateLimit, type PublicKeyView, type WebhookHealth, type WebhookView } from '@trips/settings';
import { html, time, type SafeHtml } from '../html.ts';
import { deliveryLog, type LogInput } from './delivery-log.ts';
import { healthSection } from './health-chart.ts';
import { banners, csrfField, page, stateBadge, type Banner } from './layout.ts';
import { overlapSelect } from './overlap-choices.ts';
import { signingSection } from './signing-section.ts';
import { rateLimitField, webhookFields, type WebhookDraft } from './webhook-form.ts';

export interface WebhookPageInput extends Banner {
  webhook: WebhookView & {
    secrets: { created_at: Date; expires_at: Date | null }[];
    ed25519_public_keys: PublicKeyView[];
  };
  log: LogInput;
  /** The latest failure in words (the webhook's last_error is its class). */
  lastFailureReason: string | null;
  health: WebhookHealth;
  /** EVENT_RETENTION, e.g. '30 days'. */
  retention: string;
  draft?: WebhookDraft;
}

/** The webhook's state, pace and secrets, as facts. */
function stateFacts(w: WebhookPageInput['webhook'], lastFailureReason: string | null): SafeHtml {
  return html`<dl class="facts">
    <dt>State</dt>
    <dd>${stateBadge(w.state)}</dd>
    ${
      w.paused
        ? html`<dt>Paused</dt>
            <dd>paused until ${time(w.paused.until)}: ${w.paused.reason}</dd>`
        : ''
    }
    <dt>Rate limit</dt>
    <dd>${describeRateLimit(w.rate_limit)}</dd>
    <dt>Failing since</dt>
    <dd>${time(w.failing_since)}</dd>
    <dt>Switched off since</dt>
    <dd>${time(w.disabled_at)}</dd>
    <dt>Last success</dt>
    <dd>${time(w.last_success_at, 'never')}</dd>
    <dt>Last failure</dt>
    <dd>${time(w.last_failure_at, 'never')}</dd>
    <dt>Last error</dt>
    <dd>${w.last_error ? (lastFailureReason ?? w.last_error) : '—'}</dd>
    <dt>Signing secrets</dt>
    <dd>
      ${w.secrets.map(
        (s) =>
          html`made ${time(s.created_at)}${s.expires_at ? html`, signs until ${time(s.expires_at)}` : ''}<br />`,
      )}
    </dd>
  </dl>`;
}

export function webhookPage(user: SessionUser, input: WebhookPageInput): string {
  const w = input.webhook;
  const draft = input.draft ?? {};
  const on = w.state === 'active' || w.state === 'failing';
  const action = (path: string) => `/settings/webhooks/${w.id}${path}`;
  return page(
    'Webhook',
    html`<p><a href="/settings">← API settings</a></p>
      <h1>Webhook <span class="mono">${w.url}</span></h1>
      ${banners(input)}
      <section class="card" aria-labelledby="state-heading">
        <h2 id="state-heading">State</h2>
        ${stateFacts(w, input.lastFailureReason)}
        <div class="actions">
          ${
            on
              ? html`<form method="post" action="${action('/disable')}">
                    ${csrfField(user)} <button type="submit" class="danger">Switch off</button>
                  </form>
                  <form method="post" action="${action('/test')}">
                    ${csrfField(user)} <button type="submit" class="secondary">Send a test event</button>
                  </form>`
              : html`<form method="post" action="${action('/enable')}">
                    ${csrfField(user)} <button type="submit">Switch back on</button>
                  </form>
                  <p class="hint">
                    Switching on starts a fresh failure streak; events from while it was off are not sent.
                    Once it is on, this page lets you redeliver them.
                  </p>`
          }
        </div>
      </section>

      <section class="card" aria-labelledby="health-heading">
        <h2 id="health-heading">Health</h2>
        ${healthSection(input.health)}
      </section>

      <section class="card" aria-labelledby="log-heading" id="log">
        <h2 id="log-heading">Delivery log</h2>
        ${deliveryLog(w.id, input.log)}
      </section>

      <section class="card" aria-labelledby="rotate-heading">
        <h2 id="rotate-heading">Rotate the signing secret</h2>
        <form method="post" action="${action('/rotate-secret')}">
          ${csrfField(user)}
          <label for="overlap">Keep the current secret signing for</label>
          <p class="hint" id="overlap-hint">
            During the overlap each delivery carries both signatures, so your endpoint can switch without
            losing one.
          </p>
          ${overlapSelect('overlap', 'overlap-hint')}
          <div class="actions"><button type="submit" class="secondary">Rotate secret</button></div>
        </form>
      </section>

      ${signingSection(user, w.id, w.ed25519_public_keys)}
      ${
        on
          ? html`<section class="card" aria-labelledby="redeliver-heading">
              <h2 id="redeliver-heading">Redeliver events</h2>
              <form method="post" action="${action('/redeliver')}">
                ${csrfField(user)}
                <label for="since">Send again every event since (UTC)</label>
                <p class="hint" id="since-hint">
                  Within the last ${input.retention}; your endpoint ignores events it already has by their id.
                </p>
                <input id="since" name="since" type="datetime-local" required aria-describedby="since-hint" />
                <div class="actions"><button type="submit" class="secondary">Redeliver</button></div>
              </form>
            </section>`
          : ''
      }

      <section class="card" aria-labelledby="edit-heading">
        <h2 id="edit-heading">Change the webhook</h2>
        <form method="post" action="${action('')}">
          ${csrfField(user)}
          ${webhookFields('edit', {
            url: draft.url ?? w.url,
            description: draft.description ?? w.description ?? '',
            events: draft.events ?? w.events,
          })}
          ${rateLimitField('edit', draft.rateLimit ?? String(w.rate_limit ?? ''))}
          <div class="actions"><button type="submit" class="secondary">Save changes</button></div>
        </form>
      </section>`,
    user,
  );
}
