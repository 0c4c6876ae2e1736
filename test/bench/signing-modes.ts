// `pnpm bench:dispatcher`'s signing part: the dispatcher's signing module with a switch, loaded in
// its stead by signing-modes-preload.ts, for a webhook switched to ed25519. `ed25519` signs as
// production does (D7 and D11's HMACs, and v1a with the signers the dispatcher made of the webhook's
// keys: libsodium's, services/dispatcher/src/sodium-signer.ts, untouched by the preload); `both`
// leaves the keys out, as for a webhook without ed25519; `one` signs Service-Signature alone, as the
// dispatcher did before D11: the baseline the others are measured against. Driven over IPC:
//   parent → { id, op: 'signing', mode: 'one' | 'both' | 'ed25519' }  ← { id, mode }
//   parent → { id, op: 'send-cost' }  ← { id, attempts, cpuUs } since the last, then from zero
import {
  serviceSignature,
  signatureHeaders as signBoth,
  type SignatureHeaders,
  type SigningKeys,
} from '../../packages/contracts/src/webhook-signing.ts';

export * from '../../packages/contracts/src/webhook-signing.ts';

type Mode = 'one' | 'both' | 'ed25519';
let mode: Mode = 'ed25519';

/** CPU µs the attempts spent before they first waited (signing-sender.ts), since the last read. */
let sendCost = { attempts: 0, cpuUs: 0 };
export function addSendCost(cpuUs: number): void {
  sendCost.attempts++;
  sendCost.cpuUs += cpuUs;
}

process.on('message', (message: { id?: number; op?: string; mode?: Mode }) => {
  if (message?.op === 'send-cost') {
    process.send!({ id: message.id, ...sendCost });
    sendCost = { attempts: 0, cpuUs: 0 };
  }
  if (message?.op !== 'signing' || !message.mode) return;
  mode = message.mode;
  process.send!({ id: message.id, mode });
});
// The switch must not keep the dispatcher alive once it has stopped.
(process.channel as { unref?: () => void } | undefined)?.unref?.();

export function signatureHeaders(
  eventId: string,
  body: string,
  timestamp: number,
  keys: SigningKeys,
): SignatureHeaders {
  if (mode === 'ed25519') return signBoth(eventId, body, timestamp, keys);
  if (mode === 'both') return signBoth(eventId, body, timestamp, { secrets: keys.secrets });
  return { 'service-signature': serviceSignature(body, keys.secrets, timestamp) } as SignatureHeaders;
}
