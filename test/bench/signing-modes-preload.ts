// Loaded with `node --import` before the dispatcher (`pnpm bench:dispatcher`, its signing part): the
// dispatcher's imports of the signing module resolve to signing-modes.ts, which the bench switches
// between one HMAC and both, and its imports of the Sender to signing-sender.ts. Production code is
// not touched; only this process's resolution is.
import { registerHooks } from 'node:module';

const SIGNING = '@trips/contracts/webhook-signing';
const VARIANT = new URL('./signing-modes.ts', import.meta.url).href;
// And its Sender resolves to signing-sender.ts, which counts each attempt's CPU by way of signing.
const SENDER = new URL('../../services/dispatcher/src/sender.ts', import.meta.url).href;
const COUNTING_SENDER = new URL('./signing-sender.ts', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === SIGNING && context.parentURL !== VARIANT) return { url: VARIANT, shortCircuit: true };
    const resolved = nextResolve(specifier, context);
    if (resolved.url === SENDER && context.parentURL !== COUNTING_SENDER)
      return { url: COUNTING_SENDER, shortCircuit: true };
    return resolved;
  },
});
