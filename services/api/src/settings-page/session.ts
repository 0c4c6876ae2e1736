import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { deleteSession, findSession, insertSession, type SessionUser } from '@trips/db/sessions';

/** The session cookie; its value is a random token whose SHA-256 is the session's key. */
const SESSION_COOKIE = 'trips_settings_session';
/** Before signing in there is no session: the sign-in form's token is also kept in a cookie. */
export const SIGN_IN_CSRF_COOKIE = 'trips_settings_csrf';
export const CSRF_FIELD = 'csrf';

export const newToken = () => randomBytes(32).toString('base64url');
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The value of one cookie of the request, without a cookie-parsing dependency. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * HttpOnly (no script reads it), SameSite=Lax (another site's form posts arrive without it),
 * Path=/settings (the API itself never sees it), Secure whenever the request came over https
 * (directly or through a trusted proxy), so it is never sent in clear once TLS is in front.
 */
export function setCookie(
  req: Request,
  res: Response,
  name: string,
  value: string,
  maxAgeMs?: number,
  path = '/settings',
): void {
  res.cookie(name, value, {
    httpOnly: true,
    sameSite: 'lax',
    secure: req.secure,
    path,
    ...(maxAgeMs === undefined ? {} : { maxAge: maxAgeMs }),
  });
}

export function clearCookie(req: Request, res: Response, name: string, path = '/settings'): void {
  res.clearCookie(name, { httpOnly: true, sameSite: 'lax', secure: req.secure, path });
}

/** Equal strings, compared in constant time (a form token must not leak through timing). */
export function sameToken(a: unknown, b: string | undefined): boolean {
  if (typeof a !== 'string' || b === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class Sessions {
  private readonly db: Kysely<Database>;
  private readonly ttlMs: number;
  constructor(db: Kysely<Database>, ttlMs: number) {
    this.db = db;
    this.ttlMs = ttlMs;
  }

  /** Starts a session for the user and sets its cookie. */
  async start(req: Request, res: Response, userId: string): Promise<void> {
    const token = newToken();
    await insertSession(this.db, {
      tokenHash: hashToken(token),
      userId,
      csrfToken: newToken(),
      expiresAt: new Date(Date.now() + this.ttlMs),
    });
    setCookie(req, res, SESSION_COOKIE, token, this.ttlMs);
  }

  /** The signed-in user of the request, if its cookie names a live session. */
  async current(req: Request): Promise<SessionUser | undefined> {
    const token = readCookie(req, SESSION_COOKIE);
    if (!token || token.length > 100) return undefined;
    return findSession(this.db, hashToken(token));
  }

  /** The key of the request's session (the SHA-256 of its cookie's token), if it has a cookie. */
  tokenHash(req: Request): string | undefined {
    const token = readCookie(req, SESSION_COOKIE);
    return token && token.length <= 100 ? hashToken(token) : undefined;
  }

  async end(req: Request, res: Response): Promise<void> {
    const token = readCookie(req, SESSION_COOKIE);
    if (token && token.length <= 100) await deleteSession(this.db, hashToken(token));
    clearCookie(req, res, SESSION_COOKIE);
  }
}
