// Writes openapi.json from src/openapi.ts: `pnpm --filter @trips/contracts generate`.
// Formatted with the repository's prettier settings so `prettier --check` accepts the output; the
// test in test/openapi.test.ts fails whenever the committed file differs from the document.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { openapiDocument } from '../src/openapi.ts';

const target = fileURLToPath(new URL('../openapi.json', import.meta.url));
const options = await prettier.resolveConfig(target);
await writeFile(
  target,
  await prettier.format(JSON.stringify(openapiDocument), { ...options, filepath: target }),
);
