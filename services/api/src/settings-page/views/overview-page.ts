import { EVENT_TYPE_NAMES, SCOPES } from '@trips/contracts';
import type { SessionUser } from '@trips/db/sessions';
import { describeRateLimit, type ApiKeyView, type WebhookView } from '@trips/settings';
import { html, time, type SafeHtml } from '../html.ts';
import { percent } from './health-chart.ts';
import { banners, checkboxes, csrfField, page, stateBadge, type Banner } from './layout.ts';
import { table, type Column } from './table.ts';
import { rateLimitField, webhookFields, type WebhookDraft } from './webhook-form.ts';

export function overviewPage(
  user: SessionUser,
  input: {
    keys: ApiKeyView[];
    webhooks: WebhookView[];
    /** Each webhook's share of delivered attempts over the last 24 hours. */
    successRates: Map<string, number | null>;
    draft?: WebhookDraft;
    /** Webhook URLs on this machine are allowed (development): say how a local receiver is trusted. */
    localUrls?: boolean;
  } & Banner,
): string {
  const draft = input.draft ?? {};
  return page(
    'API settings',
    html`<h1>API settings</h1>
      ${banners(input)}
      <section class="card" aria-labelledby="keys-heading">
        <h2 id="keys-heading">API keys</h2>
        ${input.keys.length === 0 ? html`<p>No keys yet.</p>` : keysTable(user, input.keys)}
        <h3>Create a key</h3>
        <form method="post" action="/settings/keys">
          ${csrfField(user)}
          <label for="key-name">Name <span class="hint">(optional, e.g. what uses it)</span></label>
          <input id="key-name" name="name" type="text" maxlength="200" />
          ${checkboxes('scopes', 'Scopes', SCOPES, ['trips:read'])}
          <div class="actions"><button type="submit">Create key</button></div>
        </form>
      </section>

      <section class="card" aria-labelledby="webhooks-heading">
        <h2 id="webhooks-heading">Webhooks</h2>
        ${input.webhooks.length === 0 ? html`<p>No webhooks yet.</p>` : webhooksTable(input.webhooks, input.successRates)}
        <h3>Add a webhook</h3>
        ${input.localUrls ? localReceiverHint : ''}
        <form method="post" action="/settings/webhooks">
          ${csrfField(user)}
          ${webhookFields('webhook', { url: draft.url ?? '', description: draft.description ?? '', events: draft.events ?? [] })}
          ${rateLimitField('webhook', draft.rateLimit ?? '')}
          <div class="actions"><button type="submit">Add webhook</button></div>
        </form>
      </section>`,
    user,
  );
}

const localReceiverHint = html`<p class="hint">
  This server also delivers to https://localhost. For a receiver of your own in the demo,
  <code>bash scripts/demo-cert.sh</code> makes a certificate its dispatcher trusts (docs/settings.md).
</p>`;

function keysTable(user: SessionUser, keys: ApiKeyView[]): SafeHtml {
  const columns: Column<ApiKeyView>[] = [
    {
      heading: 'Key',
      namesRow: true,
      cell: (key) => html`<code>${key.prefix}…</code>${key.name ? html`<br />${key.name}` : ''}`,
    },
    {
      heading: 'Scopes',
      cell: (key) =>
        key.revoked_at
          ? html`${stateBadge('revoked')} ${time(key.revoked_at)}`
          : html`<form method="post" action="/settings/keys/${key.id}/scopes">
              ${csrfField(user)} ${checkboxes('scopes', `Scopes of ${key.prefix}…`, SCOPES, key.scopes)}
              <button type="submit" class="secondary">Save scopes</button>
            </form>`,
    },
    { heading: 'Created', cell: (key) => time(key.created_at) },
    { heading: 'Last used', cell: (key) => time(key.last_used_at, 'never') },
    {
      heading: 'Actions',
      cell: (key) =>
        key.revoked_at
          ? ''
          : html`<form method="post" action="/settings/keys/${key.id}/revoke">
              ${csrfField(user)}<button type="submit" class="danger" aria-label="Revoke key ${key.prefix}…">
                Revoke
              </button>
            </form>`,
    },
  ];
  return table(columns, keys, {
    caption: html`Keys of ${user.agencyName}; a key itself is shown only when it is created.`,
  });
}

function webhooksTable(webhooks: WebhookView[], rates: Map<string, number | null>): SafeHtml {
  const columns: Column<WebhookView>[] = [
    {
      heading: 'Endpoint',
      namesRow: true,
      cell: (w) =>
        html`<a href="/settings/webhooks/${w.id}" class="mono">${w.url}</a>${
            w.description ? html`<br />${w.description}` : ''
          }`,
    },
    {
      heading: 'Events',
      cell: (w) => (w.events.length === EVENT_TYPE_NAMES.length ? 'all events' : w.events.join(', ')),
    },
    {
      heading: 'State',
      cell: (w) =>
        html`${stateBadge(w.state)}${w.paused ? html`<br /><span class="hint">paused until ${time(w.paused.until)}</span>` : ''}`,
    },
    { heading: 'Rate limit', cell: (w) => describeRateLimit(w.rate_limit) },
    { heading: 'Delivered, 24 h', cell: (w) => percent(rates.get(w.id) ?? null) },
    { heading: 'Last success', cell: (w) => time(w.last_success_at, 'never') },
  ];
  return table(columns, webhooks);
}
