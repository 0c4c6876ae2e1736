import { InvalidArgumentError } from 'commander';
import { SCOPES } from '@trips/contracts';
import { parseDuration } from '@trips/runtime';
import { checkScopes, SettingsError } from '@trips/settings';

// Argument parsers for commander: a value they refuse becomes a usage error (exit 2) naming the
// option, before any connection to the database is opened.

/** D2's scope catalogue, from the contracts so tripctl, the API and the database agree. */
export { SCOPES };

export const SUBSCRIPTIONS = ['trialing', 'active', 'expired'] as const;
export const ROLES = ['owner', 'planner'] as const;

/** Ids are opaque but typed (D4): one with the wrong prefix can never exist, so it is a typo. */
export function idOf(prefix: string, what: string): (value: string) => string {
  return (value) => {
    const id = value.trim();
    if (!new RegExp(`^${prefix}_[0-9A-Za-z]+$`).test(id)) {
      throw new InvalidArgumentError(`'${value}' is not ${what} id (${prefix}_…).`);
    }
    return id;
  };
}

/** A webhook's id (whk_…), as every webhook command takes it. */
export const webhookId = () => idOf('whk', 'a webhook');

export function parseBoolean(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError(`'${value}' is not true or false.`);
}

/**
 * A parser from one of the settings module's checks, so tripctl refuses exactly what the module
 * (and the settings page) refuses, with the same words, before any connection is opened.
 */
export function fromCheck<T>(check: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return check(value);
    } catch (error) {
      if (error instanceof SettingsError) throw new InvalidArgumentError(error.message);
      throw error;
    }
  };
}

export const parseScopes = fromCheck((value) => checkScopes(value.split(',')));

/** The same shape the users table checks, so a typo is a usage error rather than a refused insert. */
export function parseEmail(value: string): string {
  const email = value.trim();
  if (!/^[^@\s]+@[^@\s]+$/.test(email))
    throw new InvalidArgumentError(`'${value}' is not an e-mail address.`);
  return email;
}

/** A user by e-mail or id: either shape, never empty. */
export function parseUserRef(value: string): string {
  const ref = value.trim();
  if (!/^usr_[0-9A-Za-z]+$/.test(ref) && !/^[^@\s]+@[^@\s]+$/.test(ref)) {
    throw new InvalidArgumentError(`'${value}' is neither an e-mail address nor a user id (usr_…).`);
  }
  return ref;
}

export function parseName(value: string): string {
  const name = value.trim();
  if (name.length < 1 || name.length > 200) throw new InvalidArgumentError('a name has 1 to 200 characters.');
  return name;
}

export function parseHttpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`'${value}' is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError(`'${value}' is not an http or https URL.`);
  }
  return value.replace(/\/+$/, '');
}

/** A rotation's overlap: a duration such as 24h, 30m or 0s. */
export function parseOverlap(value: string): number {
  try {
    return parseDuration(value.trim());
  } catch {
    throw new InvalidArgumentError(`'${value}' is not a duration such as 24h, 30m or 0s.`);
  }
}
