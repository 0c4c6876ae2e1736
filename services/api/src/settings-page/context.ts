import type { Response } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import type { SessionUser } from '@trips/db/sessions';
import { describeDuration, type Logger } from '@trips/runtime';
import type { Settings } from '@trips/settings';
import { Sessions } from './session.ts';
import { ShownOnce } from './shown-once.ts';
import type { SignInPolicy } from './sign-in.ts';

export interface SettingsPageOptions extends SignInPolicy {
  settings: Settings;
  sessionTtlMs: number;
  /** EVENT_RETENTION, to tell owners how far back a redelivery reaches. */
  eventRetentionMs: number;
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS (development only): the add form then says how to reach this machine. */
  allowPrivateNetworks?: boolean;
  /** Called once a key's scopes changed or it was revoked: this replica forgets cached credentials. */
  keysChanged?: () => void;
}

/** What the page's routes share, area by area: made once, when the router is. */
export interface PageContext {
  db: Kysely<Database>;
  logger: Logger;
  options: SettingsPageOptions;
  settings: Settings;
  sessions: Sessions;
  /** A new key or secret, kept sealed for the one page that shows it. */
  shownOnce: ShownOnce;
  /** EVENT_RETENTION in words, e.g. '30 days'. */
  retention: string;
}

export function pageContext(db: Kysely<Database>, logger: Logger, options: SettingsPageOptions): PageContext {
  const sessions = new Sessions(db, options.sessionTtlMs);
  return {
    db,
    logger,
    options,
    settings: options.settings,
    sessions,
    shownOnce: new ShownOnce(db, sessions),
    retention: describeDuration(options.eventRetentionMs),
  };
}

/** A response past the session check: `res.locals.user` is the signed-in user. */
export type SignedIn = Response<unknown, { user: SessionUser }>;

/** Who the settings module acts for (it checks that they are an owner, and audits it). */
export const actor = (res: SignedIn) => ({ userId: res.locals.user.userId });
