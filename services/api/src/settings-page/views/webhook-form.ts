import { EVENT_TYPE_NAMES, EVENT_TYPES, OBJECT_TYPES, type ObjectType } from '@trips/contracts';
import { MAX_RATE_LIMIT, MIN_RATE_LIMIT } from '@trips/settings';
import { html, type SafeHtml } from '../html.ts';
import { checkboxes } from './layout.ts';

/** The value of the "All events" choice in the form's `events` field. */
export const ALL_EVENTS = 'all';
const OBJECT_NAMES: Record<ObjectType, string> = { trip: 'Trips', payment: 'Payments', contact: 'Contacts' };

export interface WebhookDraft {
  url?: string;
  description?: string;
  events?: string[];
  /** The rate limit as typed; empty: none. */
  rateLimit?: string;
}

/** A webhook's URL, description and events, as the add and the change forms both ask for them. */
export function webhookFields(
  id: string,
  values: { url: string; description: string; events: readonly string[] },
) {
  return html`<label for="${id}-url">Endpoint URL</label>
    <p class="hint" id="${id}-url-hint">
      https only, on the public internet. Each delivery is signed (see the
      <a href="/docs#webhooks">webhooks guide</a>).
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
    ${eventChoice(values.events)}`;
}

/**
 * The owner's rate limit (D10), as the add and the change forms both ask for it: a whole number of
 * deliveries a second, or empty for none (the browser checks the range; the module checks again).
 */
export function rateLimitField(id: string, value: string) {
  return html`<label for="${id}-rate-limit">Rate limit <span class="hint">(optional)</span></label>
    <p class="hint" id="${id}-rate-limit-hint">
      At most this many deliveries a second, ${MIN_RATE_LIMIT} to ${MAX_RATE_LIMIT}, for a receiver that
      cannot take more. Empty: no limit; we slow down anyway when your endpoint answers 429 or 503.
    </p>
    <input
      id="${id}-rate-limit"
      name="rate_limit"
      type="number"
      min="${MIN_RATE_LIMIT}"
      max="${MAX_RATE_LIMIT}"
      step="1"
      inputmode="numeric"
      aria-describedby="${id}-rate-limit-hint"
      value="${value}"
    />`;
}

/**
 * "All events" (as tripctl's `--events all`), or the types one by one, grouped by the object they
 * concern. Without script the two cannot exclude each other; "All events" wins when both are sent.
 */
function eventChoice(chosen: readonly string[]): SafeHtml {
  const all = chosen.includes(ALL_EVENTS) || EVENT_TYPE_NAMES.every((t) => chosen.includes(t));
  return html`<fieldset>
    <legend>Events to send</legend>
    <label
      ><input type="checkbox" name="events" value="${ALL_EVENTS}" ${all ? html` checked` : ''} />
      <strong>All events</strong></label
    >
    <p class="hint">Or choose some:</p>
    ${OBJECT_TYPES.map((object) =>
      checkboxes(
        'events',
        OBJECT_NAMES[object],
        EVENT_TYPE_NAMES.filter((t) => EVENT_TYPES[t].object === object),
        all ? [] : chosen,
      ),
    )}
  </fieldset>`;
}
