import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { html } from '../html.ts';
import { checkboxes } from './layout.ts';

export interface WebhookDraft {
  url?: string;
  description?: string;
  events?: string[];
}

/** A webhook's URL, description and events, as the add and the change forms both ask for them. */
export function webhookFields(
  id: string,
  values: { url: string; description: string; events: readonly string[] },
) {
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
