/**
 * Id prefixes (decisions.md D4, plus `req_` of D1). Ids are opaque to clients: the prefix only
 * tells a human (and our schemas) what kind of thing an id names.
 */
export const ID_PREFIXES = {
  trip: 'trp_',
  payment: 'pay_',
  contact: 'con_',
  event: 'evt_',
  webhook: 'whk_',
  api_key: 'key_',
  agency: 'agy_',
  request: 'req_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/**
 * The schema pattern of an id. After the prefix we accept any URL-safe characters rather than
 * exactly what the database generates today (base62), because ids appear in URLs and are
 * promised to be opaque: clients must not depend on their length or alphabet.
 */
export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIXES[kind]}[0-9A-Za-z_-]+$`;
}

/**
 * A test event's id (settings: "Send a test event"). Test events are delivered like any other but
 * are in no event record, so what was sent cannot be read back from `events`.
 */
export const TEST_EVENT_ID_PREFIX = `${ID_PREFIXES.event}test_`;
export const isTestEventId = (id: string): boolean => id.startsWith(TEST_EVENT_ID_PREFIX);
