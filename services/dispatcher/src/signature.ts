import { createHmac } from 'node:crypto';

/**
 * The `Service-Signature` header of D7: `t=<unix seconds>,v1=<hex HMAC-SHA256>`, one `v1=` per
 * secret that signs now (two while a rotation overlaps). The HMAC key is the UTF-8 bytes of the
 * whole secret string, `whsec_` included; the message is `<t>.<raw body>`.
 */
export function signatureHeader(body: string, secrets: readonly string[], timestampSeconds: number): string {
  const signed = `${timestampSeconds}.${body}`;
  const signatures = secrets.map(
    (secret) => `v1=${createHmac('sha256', secret).update(signed).digest('hex')}`,
  );
  return [`t=${timestampSeconds}`, ...signatures].join(',');
}
