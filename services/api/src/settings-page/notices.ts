import type { Request } from 'express';
import { field } from './form-fields.ts';

/** What a finished action tells the owner on the page it redirects to (no free text in URLs). */
const NOTICES: Record<string, string> = {
  'scopes-saved': 'The key’s scopes are saved; they apply to its next request.',
  'key-revoked': 'The key is revoked: requests with it are refused from now on.',
  'webhook-updated': 'Your changes are saved.',
  'webhook-enabled': 'The webhook is on again, with a fresh failure streak.',
  'webhook-disabled': 'The webhook is switched off: nothing is delivered to it until you switch it back on.',
  'test-sent': 'A test event is on its way; it shows in the delivery log in a moment (reload the page).',
  'sent-again':
    'The event is queued to be sent again, as a new delivery (attempt 1); it shows in the delivery log in a moment.',
  redelivered: 'The events are queued for delivery again; they show in the delivery log as they go.',
  'ed25519-on':
    'ed25519 is on: from the next delivery, webhook-signature also carries a v1a signature that the public key below verifies.',
  'ed25519-rotated':
    'A new key signs from the next delivery; the previous one goes on signing until the time shown below.',
  'ed25519-off': 'ed25519 is off: deliveries carry no v1a signature from the next one.',
};

/** The notice a redirect names in `?notice=`, if it is one of ours. */
export const notice = (req: Request): string | undefined => NOTICES[field(req.query.notice)];
