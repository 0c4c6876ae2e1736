import { EVENT_TYPE_NAMES, SCOPES } from '@trips/contracts';
import type { SessionUser, WebhookAttemptRow, WebhookState } from '@trips/db';
import type { ApiKeyView, WebhookView } from '@trips/settings';
import { html, time, type SafeHtml } from './html.ts';
import { CSRF_FIELD } from './session.ts';

// The settings page's HTML, server-rendered without script. Every value goes through `html`,
// which escapes it. Forms post back to the page and are answered with a redirect (or, for a key
// or secret shown once, with a page that is never cached).

export interface Banner {
  notice?: string | undefined;
  error?: string | undefined;
}

export function page(title: string, body: SafeHtml, user?: SessionUser): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · API settings</title>
        <link rel="stylesheet" href="/settings/style.css" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <div class="inner">
            <p>
              <strong>Trip Planner</strong> · API
              settings${user ? html` for <strong>${user.agencyName}</strong>` : ''}
            </p>
            ${
              user
                ? html`<form method="post" action="/settings/sign-out" class="inline">
                    ${csrfField(user)}<span>${user.email}</span>
                    <button type="submit" class="link">Sign out</button>
                  </form>`
                : ''
            }
          </div>
        </header>
        <main id="main" class="inner" tabindex="-1">${body}</main>
      </body>
    </html>`.value;
}

export const csrfField = (user: SessionUser) =>
  html`<input type="hidden" name="${CSRF_FIELD}" value="${user.csrfToken}" />`;

function banners({ notice, error }: Banner): SafeHtml {
  return html`${notice ? html`<div class="notice" role="status">${notice}</div>` : ''}${
    error ? html`<div class="error" role="alert"><strong>That did not work:</strong> ${error}</div>` : ''
  }`;
}

export function signInPage(input: { csrf: string; email?: string; error?: string }): string {
  return page(
    'Sign in',
    html`<h1>Sign in to API settings</h1>
      ${banners({ error: input.error })}
      <section class="card">
        <form method="post" action="/settings/sign-in">
          <input type="hidden" name="${CSRF_FIELD}" value="${input.csrf}" />
          <label for="email">E-mail</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="username"
            required
            value="${input.email ?? ''}"
          />
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
          <div class="actions"><button type="submit">Sign in</button></div>
        </form>
        <p class="hint">
          Owners of an agency manage its API keys and webhooks here. Ask the platform team for a password
          (<code>tripctl user set-password</code>).
        </p>
      </section>`,
  );
}

export function messagePage(title: string, message: string, user?: SessionUser): string {
  return page(
    title,
    html`<h1>${title}</h1>
      <p role="alert">${message}</p>
      <p><a href="/settings">Back to API settings</a></p>`,
    user,
  );
}

/** A key or secret, shown once: it is not stored anywhere it could be shown again. */
export function shownOncePage(
  user: SessionUser,
  input: { title: string; label: string; value: string; explanation: SafeHtml; back: string },
): string {
  return page(
    input.title,
    html`<h1>${input.title}</h1>
      <div class="secret" role="status">
        <p><strong>${input.label}</strong>, shown only this once. Copy it now and keep it somewhere safe:</p>
        <output aria-label="${input.label}">${input.value}</output>
        ${input.explanation}
      </div>
      <p><a href="${input.back}">I have copied it, go back</a></p>`,
    user,
  );
}

const STATE_NAMES: Record<WebhookState | 'revoked', string> = {
  active: 'Active',
  failing: 'Failing',
  switched_off: 'Switched off',
  disabled: 'Off',
  revoked: 'Revoked',
};
const stateBadge = (state: WebhookState | 'revoked') =>
  html`<span class="state state-${state}">${STATE_NAMES[state]}</span>`;

function checkboxes(name: string, legend: string, options: readonly string[], checked: readonly string[]) {
  return html`<fieldset>
    <legend>${legend}</legend>
    ${options.map(
      (option) =>
        html`<label
          ><input
            type="checkbox"
            name="${name}"
            value="${option}"
            ${checked.includes(option) ? html` checked` : ''}
          />
          <code>${option}</code></label
        >`,
    )}
  </fieldset>`;
}

export interface WebhookDraft {
  url?: string;
  description?: string;
  events?: string[];
}

export function overviewPage(
  user: SessionUser,
  input: { keys: ApiKeyView[]; webhooks: WebhookView[]; draft?: WebhookDraft } & Banner,
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
        ${input.webhooks.length === 0 ? html`<p>No webhooks yet.</p>` : webhooksTable(input.webhooks)}
        <h3>Add a webhook</h3>
        <form method="post" action="/settings/webhooks">
          ${csrfField(user)}
          ${webhookFields('webhook', { url: draft.url ?? '', description: draft.description ?? '', events: draft.events ?? [] })}
          <div class="actions"><button type="submit">Add webhook</button></div>
        </form>
      </section>`,
    user,
  );
}

/** A webhook's URL, description and events, as the add and the change forms both ask for them. */
function webhookFields(id: string, values: { url: string; description: string; events: readonly string[] }) {
  return html`<label for="${id}-url">Endpoint URL</label>
    <p class="hint" id="${id}-url-hint">
      https only, on the public internet. Each delivery is signed (see the docs).
    </p>
    <input
      id="${id}-url"
      name="url"
      type="url"
      required
      aria-describedby="${id}-url-hint"
      placeholder="https://example.com/webhooks/trips"
      value="${values.url}"
    />
    <label for="${id}-description">Description <span class="hint">(optional)</span></label>
    <input
      id="${id}-description"
      name="description"
      type="text"
      maxlength="500"
      value="${values.description}"
    />
    ${checkboxes('events', 'Events to send', EVENT_TYPE_NAMES, values.events)}`;
}

function keysTable(user: SessionUser, keys: ApiKeyView[]): SafeHtml {
  return html`<table>
    <caption>
      Keys of ${user.agencyName}; a key itself is shown only when it is created.
    </caption>
    <thead>
      <tr>
        <th scope="col">Key</th>
        <th scope="col">Scopes</th>
        <th scope="col">Created</th>
        <th scope="col">Last used</th>
        <th scope="col">Actions</th>
      </tr>
    </thead>
    <tbody>
      ${keys.map(
        (key) =>
          html`<tr>
            <th scope="row"><code>${key.prefix}…</code>${key.name ? html`<br />${key.name}` : ''}</th>
            <td>
              ${
                key.revoked_at
                  ? html`${stateBadge('revoked')} ${time(key.revoked_at)}`
                  : html`<form method="post" action="/settings/keys/${key.id}/scopes">
                      ${csrfField(user)}
                      ${checkboxes('scopes', `Scopes of ${key.prefix}…`, SCOPES, key.scopes)}
                      <button type="submit" class="secondary">Save scopes</button>
                    </form>`
              }
            </td>
            <td>${time(key.created_at)}</td>
            <td>${time(key.last_used_at, 'never')}</td>
            <td>
              ${
                key.revoked_at
                  ? ''
                  : html`<form method="post" action="/settings/keys/${key.id}/revoke">
                      ${csrfField(user)}<button
                        type="submit"
                        class="danger"
                        aria-label="Revoke key ${key.prefix}…"
                      >
                        Revoke
                      </button>
                    </form>`
              }
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function webhooksTable(webhooks: WebhookView[]): SafeHtml {
  return html`<table>
    <thead>
      <tr>
        <th scope="col">Endpoint</th>
        <th scope="col">Events</th>
        <th scope="col">State</th>
        <th scope="col">Last success</th>
      </tr>
    </thead>
    <tbody>
      ${webhooks.map(
        (w) =>
          html`<tr>
            <th scope="row">
              <a href="/settings/webhooks/${w.id}" class="mono">${w.url}</a>${
                w.description ? html`<br />${w.description}` : ''
              }
            </th>
            <td>${w.events.length === EVENT_TYPE_NAMES.length ? 'all events' : w.events.join(', ')}</td>
            <td>${stateBadge(w.state)}</td>
            <td>${time(w.last_success_at, 'never')}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export const OVERLAP_CHOICES: { value: string; label: string }[] = [
  { value: '0', label: 'no overlap: the old secret stops now' },
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '24 hours' },
  { value: '259200', label: '3 days' },
  { value: '604800', label: '7 days' },
];

export function webhookPage(
  user: SessionUser,
  input: {
    webhook: WebhookView & { secrets: { created_at: Date; expires_at: Date | null }[] };
    attempts: WebhookAttemptRow[];
    /** EVENT_RETENTION, e.g. '30 days'. */
    retention: string;
    draft?: WebhookDraft;
  } & Banner,
): string {
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
        <dl class="facts">
          <dt>State</dt>
          <dd>${stateBadge(w.state)}</dd>
          <dt>Failing since</dt>
          <dd>${time(w.failing_since)}</dd>
          <dt>Switched off since</dt>
          <dd>${time(w.disabled_at)}</dd>
          <dt>Last success</dt>
          <dd>${time(w.last_success_at, 'never')}</dd>
          <dt>Last failure</dt>
          <dd>${time(w.last_failure_at, 'never')}</dd>
          <dt>Last error</dt>
          <dd>${w.last_error ?? '—'}</dd>
          <dt>Signing secrets</dt>
          <dd>
            ${w.secrets.map(
              (s) =>
                html`made
                  ${time(s.created_at)}${s.expires_at ? html`, signs until ${time(s.expires_at)}` : ''}<br />`,
            )}
          </dd>
        </dl>
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
                    Switching on starts a fresh failure streak; events from while it was off are not sent
                    (redeliver them below).
                  </p>`
          }
        </div>
      </section>

      <section class="card" aria-labelledby="attempts-heading">
        <h2 id="attempts-heading">Delivery log</h2>
        ${input.attempts.length === 0 ? html`<p>No deliveries yet.</p>` : attemptsTable(input.attempts)}
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
          <select id="overlap" name="overlap_seconds" aria-describedby="overlap-hint">
            ${OVERLAP_CHOICES.map(
              (c) =>
                html`<option value="${c.value}" ${c.value === '86400' ? html` selected` : ''}>
                  ${c.label}
                </option>`,
            )}
          </select>
          <div class="actions"><button type="submit" class="secondary">Rotate secret</button></div>
        </form>
      </section>

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
          <div class="actions"><button type="submit" class="secondary">Save changes</button></div>
        </form>
      </section>`,
    user,
  );
}

function attemptsTable(attempts: WebhookAttemptRow[]): SafeHtml {
  return html`<table>
    <caption>
      The last ${attempts.length} attempts, newest first.
    </caption>
    <thead>
      <tr>
        <th scope="col">Time</th>
        <th scope="col">Event</th>
        <th scope="col">Attempt</th>
        <th scope="col">Result</th>
        <th scope="col">Duration</th>
        <th scope="col">Answer</th>
      </tr>
    </thead>
    <tbody>
      ${attempts.map(
        (a) =>
          html`<tr>
            <td>${time(a.attempted_at)}</td>
            <td><code>${a.event_type}</code><br /><code>${a.event_id}</code></td>
            <td>${a.attempt}</td>
            <td>
              ${
                a.succeeded
                  ? html`<span class="state state-active">Delivered</span>`
                  : html`<span class="state state-failing">Failed</span>`
              }
              ${a.status_code ?? ''} ${a.error ?? ''}
            </td>
            <td>${a.duration_ms} ms</td>
            <td>
              ${
                a.response_body
                  ? html`<details>
                      <summary>First KiB</summary>
                      <pre class="mono">${a.response_body}</pre>
                    </details>`
                  : '—'
              }
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}
