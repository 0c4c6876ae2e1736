import { isIP } from 'node:net';
import { addressKind, isDeliverableHost, isPublicAddress } from '@trips/broker';
import { EVENT_TYPE_NAMES, isEventType, SCOPES } from '@trips/contracts';
import { invalid } from './errors.ts';

/** The webhooks table refuses longer URLs (migration 0005). */
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 500;

/**
 * A webhook URL as the dispatcher will call it: https only (D7), no credentials (they would be
 * sent to whoever answers and shown in every list), at most 2048 characters, and not an IP literal
 * or localhost name outside the public internet. A host name is resolved only at delivery time,
 * where the dispatcher checks the address it connects to; this refuses what is plainly private.
 * The message never repeats the URL, which may carry a password.
 */
export function checkWebhookUrl(
  value: string,
  options: { allowPrivateNetworks?: boolean; nameDevelopmentSetting?: boolean } = {},
): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw invalid('the webhook URL is not a URL.');
  }
  if (url.username !== '' || url.password !== '') {
    throw invalid(
      'a webhook URL must not carry credentials (user:password@); the signature authenticates deliveries.',
    );
  }
  if (url.protocol !== 'https:')
    throw invalid('a webhook URL must be https; webhooks are delivered over https only.');
  if (!isDeliverableHost(url.hostname)) {
    throw invalid(
      `the webhook URL is not a URL: its host name ${url.hostname} has an empty or overlong part between dots.`,
    );
  }
  if (url.href.length > MAX_URL_LENGTH) {
    throw invalid(`a webhook URL has at most ${MAX_URL_LENGTH} characters; this one has ${url.href.length}.`);
  }
  if (!options.allowPrivateNetworks) {
    // Without brackets, and without the root's trailing dot: `localhost.` is localhost.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
    const isPrivateIp = isIP(host) !== 0 && !isPublicAddress(host);
    const isLocalName = host === 'localhost' || host.endsWith('.localhost');
    if (isPrivateIp || isLocalName) {
      const kind = isLocalName ? 'loopback' : addressKind(host);
      throw invalid(
        `a webhook URL must reach the public internet, and ${url.hostname} is a ${kind} address: deliveries ` +
          'never go to loopback, private or link-local addresses, which could reach our own network instead of yours.' +
          (options.nameDevelopmentSetting
            ? ' In development, WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (for the API and the dispatcher) allows it.'
            : ''),
      );
    }
  }
  return url.href;
}

export function checkEventTypes(types: readonly string[]): string[] {
  const unique = [...new Set(types.map((s) => s.trim()))].filter((s) => s !== '');
  if (unique.length === 0) throw invalid(`give at least one event type of ${EVENT_TYPE_NAMES.join(', ')}.`);
  const unknown = unique.filter((s) => !isEventType(s));
  if (unknown.length > 0) {
    throw invalid(
      `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `'${s}'`).join(', ')}; ` +
        `known event types: ${EVENT_TYPE_NAMES.join(', ')}.`,
    );
  }
  return unique;
}

export function checkScopes(scopes: readonly string[]): string[] {
  const unique = [...new Set(scopes.map((s) => s.trim()))].filter((s) => s !== '');
  if (unique.length === 0) throw invalid(`give at least one scope of ${SCOPES.join(', ')}.`);
  const unknown = unique.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) {
    throw invalid(
      `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `'${s}'`).join(', ')}; ` +
        `known scopes: ${SCOPES.join(', ')}.`,
    );
  }
  return unique;
}

export function checkDescription(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const description = value.trim();
  if (description.length < 1 || description.length > MAX_DESCRIPTION_LENGTH) {
    throw invalid(`a description has 1 to ${MAX_DESCRIPTION_LENGTH} characters.`);
  }
  return description;
}

/** The owner's rate limit of a webhook, deliveries a second (D10; the webhooks table checks it too). */
export const MIN_RATE_LIMIT = 1;
export const MAX_RATE_LIMIT = 1000;
const RATE_LIMIT_RULE = `a rate limit is a whole number of deliveries a second from ${MIN_RATE_LIMIT} to ${MAX_RATE_LIMIT}, or off for none.`;

/** A rate limit as the module takes it: a whole number in range, or null for none. */
export function checkRateLimit(value: number | null): number | null {
  if (value === null) return null;
  if (!Number.isInteger(value) || value < MIN_RATE_LIMIT || value > MAX_RATE_LIMIT) {
    throw invalid(RATE_LIMIT_RULE);
  }
  return value;
}

/** A rate limit as typed (the page's field, tripctl's --rate-limit): digits, or `off` or nothing for none. */
export function parseRateLimit(value: string): number | null {
  const text = value.trim();
  if (text === '' || text.toLowerCase() === 'off') return null;
  if (!/^\d{1,7}$/.test(text)) throw invalid(RATE_LIMIT_RULE);
  return checkRateLimit(Number(text));
}
