// Loaded with `node --import` before the dispatcher (`pnpm bench:dispatcher`, its signing part): the
// dispatcher's imports of the signing module resolve to signing-modes.ts, which the bench switches
// between one HMAC and both. Production code is not touched; only this process's resolution is.
import { registerHooks } from 'node:module';

const SIGNING = '@trips/contracts/webhook-signing';
const VARIANT = new URL('./signing-modes.ts', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === SIGNING && context.parentURL !== VARIANT) return { url: VARIANT, shortCircuit: true };
    return nextResolve(specifier, context);
  },
});
