import type { SessionUser } from '@trips/db/sessions';
import type { Settings } from '@trips/settings';
import { html, time, type SafeHtml } from '../html.ts';
import { indentJson } from '../indent-json.ts';
import { banners, csrfField, page, type Banner } from './layout.ts';

export type AttemptDetail = Awaited<ReturnType<Settings['getAttempt']>>;

/**
 * One attempt in full, for the receiver's developer: the request as sent (the signature, never a
 * secret) and what came back, and "send this event again" as a fresh delivery.
 */
export function attemptPage(user: SessionUser, input: AttemptDetail & Banner): string {
  const { webhook: w, attempt: a, request, response } = input;
  const base = `/settings/webhooks/${w.id}`;
  const on = w.state === 'active' || w.state === 'failing';
  return page(
    `Attempt ${a.id}`,
    html`<p><a href="${base}#log">← Delivery log of this webhook</a></p>
      <h1>Attempt ${a.attempt} of <code>${a.event_id}</code></h1>
      ${banners(input)}
      <section class="card" aria-labelledby="outcome-heading">
        <h2 id="outcome-heading">What happened</h2>
        <dl class="facts">
          <dt>Result</dt>
          <dd>
            ${
              a.succeeded
                ? html`<span class="state state-active">Delivered</span>`
                : html`<span class="state state-failing">Failed</span>`
            }
            ${a.reason}
          </dd>
          <dt>Time</dt>
          <dd>${time(a.attempted_at)}</dd>
          <dt>Duration</dt>
          <dd>${response.duration_ms} ms</dd>
          <dt>Event</dt>
          <dd><code>${a.event_type}</code> <code>${a.event_id}</code></dd>
        </dl>
        ${
          on
            ? html`<form method="post" action="${base}/attempts/${a.id}/send-again" class="actions">
                ${csrfField(user)}
                <button type="submit" class="secondary">Send this event again</button>
                <span class="hint">as a new delivery (attempt 1); your endpoint dedupes by event id.</span>
              </form>`
            : ''
        }
      </section>

      <section class="card" aria-labelledby="request-heading">
        <h2 id="request-heading">Request sent</h2>
        <p class="mono">POST ${request.url}</p>
        <h3>Headers</h3>
        <pre class="block">${request.headers.map(([name, value]) => `${name}: ${value}\n`).join('')}</pre>
        <p class="hint">
          The signing secret is never shown: check the signature with the secret you keep (see the
          <a href="/docs#webhooks">webhooks guide</a>).
        </p>
        <h3>Body</h3>
        ${
          request.body === null
            ? html`<p>No longer kept: the event has left the event record.</p>`
            : body(request.body, 'Exactly as sent: the bytes the signature covers')
        }
      </section>

      <section class="card" aria-labelledby="response-heading">
        <h2 id="response-heading">Answer</h2>
        ${
          response.status === null
            ? html`<p>No answer: ${a.reason}.</p>`
            : html`<p>Status <strong>${response.status}</strong></p>
                <h3>Headers</h3>
                <pre class="block">
${response.headers ?? '(not kept for attempts made before they were)'}</pre>
                <h3>Body <span class="hint">(the first KiB)</span></h3>
                ${response.body ? body(response.body, 'Exactly as received') : html`<pre class="block">(empty)</pre>`}`
        }
      </section>`,
    user,
  );
}

/**
 * A body as its reader wants it: JSON indented, with the exact text one click away (a signature is
 * checked over that); anything else exactly as it is.
 */
function body(text: string, exactly: string): SafeHtml {
  const indented = indentJson(text);
  if (indented === null || indented === text) return html`<pre class="block">${text}</pre>`;
  return html`<pre class="block">${indented}</pre>
    <details>
      <summary>${exactly}</summary>
      <pre class="block">${text}</pre>
    </details>`;
}
