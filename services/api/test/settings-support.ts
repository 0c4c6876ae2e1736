import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createUser } from '@trips/db/users';
import { hashPassword } from '@trips/settings';

export const PASSWORD = 'correct horse battery staple';

export interface People {
  agencyId: string;
  owner: { id: string; email: string };
  planner: { id: string; email: string };
}

/** An agency with an owner and a planner, both with PASSWORD (hashed once, as tripctl would). */
export async function agencyWithPeople(
  db: Kysely<Database>,
  name: string,
  passwordHash?: string,
): Promise<People> {
  const hash = passwordHash ?? (await hashPassword(PASSWORD));
  const { id: agencyId } = await createAgency(db, { name, apiEnabled: true, subscriptionStatus: 'active' });
  const slug = name.toLowerCase().replace(/[^a-z]+/g, '-');
  const owner = await createUser(db, {
    agencyId,
    email: `owner@${slug}.test`,
    role: 'owner',
    passwordHash: hash,
  });
  const planner = await createUser(db, {
    agencyId,
    email: `planner@${slug}.test`,
    role: 'planner',
    passwordHash: hash,
  });
  return {
    agencyId,
    owner: { id: owner.id, email: owner.email },
    planner: { id: planner.id, email: planner.email },
  };
}

/**
 * A browser without a browser, for the page's HTTP rules: keeps cookies, reads each form's CSRF
 * token from the last page, never follows redirects (tests check them).
 */
export class FormClient {
  readonly base: string;
  readonly cookies = new Map<string, string>();
  lastSetCookies: string[] = [];
  csrf = '';
  /** Sent with every request, as a proxy in front of the page would add them (X-Forwarded-For). */
  headers: Record<string, string> = {};

  constructor(base: string) {
    this.base = base;
  }

  private async send(
    path: string,
    init: RequestInit,
  ): Promise<{ status: number; headers: Headers; body: string }> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const response = await fetch(this.base + path, {
      ...init,
      redirect: 'manual',
      headers: {
        ...this.headers,
        ...(init.headers as Record<string, string>),
        ...(cookie ? { cookie } : {}),
      },
    });
    this.lastSetCookies = response.headers.getSetCookie();
    for (const line of this.lastSetCookies) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const [name, value] = [pair!.slice(0, at), pair!.slice(at + 1)];
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const body = await response.text();
    const token = /name="csrf" value="([^"]+)"/.exec(body);
    if (token) this.csrf = token[1]!;
    return { status: response.status, headers: response.headers, body };
  }

  get(path: string) {
    return this.send(path, { method: 'GET' });
  }

  /** Posts a form; `csrf` is added unless the fields give one (or `null` to leave it out). */
  post(path: string, fields: Record<string, string | string[] | null>) {
    const form = new URLSearchParams();
    const all = { csrf: this.csrf, ...fields };
    for (const [name, value] of Object.entries(all)) {
      if (value === null) continue;
      for (const v of Array.isArray(value) ? value : [value]) form.append(name, v);
    }
    return this.send(path, {
      method: 'POST',
      body: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  }

  /** Follows a 303 of a form's post to its page, as a browser does. */
  follow(res: { status: number; headers: Headers }) {
    expect(res.status).toBe(303);
    return this.get(new URL(res.headers.get('location')!, this.base).pathname);
  }

  async signIn(email: string, password = PASSWORD) {
    await this.get('/settings/sign-in');
    return this.post('/settings/sign-in', { email, password });
  }
}
