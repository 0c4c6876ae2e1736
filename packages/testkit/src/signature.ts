import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ReceivedRequest } from './receiver.ts';

/**
 * A receiver's check of a delivery's Service-Signature (decisions.md D7), written here from the
 * spec rather than imported from the dispatcher, so a test verifies the signing independently:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">[,v1=…]`, any v1 matching, t within tolerance.
 */
export function verifySignature(request: ReceivedRequest, secret: string, toleranceSeconds = 300): boolean {
  const header = String(request.headers['service-signature'] ?? '');
  const parts = header.split(',').map((part) => part.split('=') as [string, string]);
  const t = parts.find(([k]) => k === 't')?.[1];
  if (!t || Math.abs(Date.now() / 1000 - Number(t)) > toleranceSeconds) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.${request.body}`).digest();
  return parts
    .filter(([k]) => k === 'v1')
    .some(([, v]) => {
      const given = Buffer.from(v, 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
