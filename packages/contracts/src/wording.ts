// One product name and one way to write a time for people, everywhere people read them: the API
// reference, the settings page, the e-mails to owners and tripctl's lines (docs/wording.md).
// What machines read (API bodies, JSON output, headers) keeps D4's ISO 8601 with milliseconds.

/** The product's name, as the webhooks' User-Agent (`TripService-Webhooks/1`, D7) spells it apart. */
export const PRODUCT_NAME = 'Trip Service';

/** A time for people: `2026-11-21 10:15:30 UTC` (UTC always, to the second). */
export function formatTime(value: Date | string): string {
  return `${new Date(value).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
