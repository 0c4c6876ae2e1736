import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { insertShownOnce, takeShownOnce } from '@trips/db/shown-once';
import { clearCookie, readCookie, setCookie, type Sessions } from './session.ts';

// Post/redirect/get for a key or secret shown once (issue 26). The post that makes it seals it
// (AES-256-GCM) under a fresh key, stores the sealed text with the session (migration 0019) and
// gives the key to the browser in a cookie scoped to the one page that shows it; then it redirects
// there. That page takes (deletes) the sealed text as it reads it. So reloading the page, or going
// back to it, creates nothing and shows nothing again; neither the table nor the cookie alone
// reveals anything; and no key or secret ever appears in a URL or a log.

const COOKIE = 'trips_shown_once';
const PAGE = '/settings/shown-once/';
const WAIT_MS = 10 * 60_000;

/** What the page says around the value: which kind of thing it is, and its non-secret facts. */
export type ShownOnceAbout =
  | { kind: 'key'; prefix: string; scopes: string[] }
  | { kind: 'webhook'; webhookId: string; url: string }
  | { kind: 'rotated'; webhookId: string; previousExpireAt: string };

function seal(value: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const text = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return [iv, text, cipher.getAuthTag()].map((b) => b.toString('base64url')).join('.');
}

function unseal(sealed: string, key: Buffer): string | undefined {
  try {
    const [iv, text, tag] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', key, iv!);
    decipher.setAuthTag(tag!);
    return Buffer.concat([decipher.update(text!), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

export class ShownOnce {
  private readonly db: Kysely<Database>;
  private readonly sessions: Sessions;
  constructor(db: Kysely<Database>, sessions: Sessions) {
    this.db = db;
    this.sessions = sessions;
  }

  /** Keeps the value for its page, and redirects there (303: the browser GETs it). */
  async redirectToShow(req: Request, res: Response, about: ShownOnceAbout, value: string): Promise<void> {
    const sessionTokenHash = this.sessions.tokenHash(req);
    if (!sessionTokenHash) throw new Error('shown-once value without a session');
    const id = randomBytes(18).toString('base64url');
    const key = randomBytes(32);
    await insertShownOnce(this.db, { id, sessionTokenHash, about, sealed: seal(value, key) });
    setCookie(req, res, COOKIE, key.toString('base64url'), WAIT_MS, PAGE + id);
    res.redirect(303, PAGE + id);
  }

  /** The value and what it is, the first time its page is read; undefined ever after. */
  async take(req: Request, res: Response): Promise<{ about: ShownOnceAbout; value: string } | undefined> {
    const id = String(req.params.id);
    const sessionTokenHash = this.sessions.tokenHash(req);
    const key = readCookie(req, COOKIE);
    clearCookie(req, res, COOKIE, PAGE + id);
    if (!sessionTokenHash || !/^[A-Za-z0-9_-]{16,64}$/.test(id)) return undefined;
    const row = await takeShownOnce(this.db, id, sessionTokenHash);
    if (!row || !key) return undefined;
    const value = unseal(row.sealed, Buffer.from(key, 'base64url'));
    return value === undefined ? undefined : { about: row.about as ShownOnceAbout, value };
  }
}
