/** The scopes an owner can give a key (decisions.md D2). */
export const SCOPES = ['trips:read', 'payments:read', 'contacts:read', 'events:read'] as const;

export type Scope = (typeof SCOPES)[number];

/** `GET /events` itself needs this, on top of the scope of each event's object (D2). */
export const EVENTS_SCOPE: Scope = 'events:read';
