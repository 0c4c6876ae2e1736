import { readFileSync } from 'node:fs';

/** The version in tripctl's package.json, which the image ships beside src/ (`tripctl --version`). */
export const TRIPCTL_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
