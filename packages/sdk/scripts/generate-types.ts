// Writes src/openapi-types.ts from the contracts' OpenAPI document (see openapi-to-ts.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { generateTypes } from './openapi-to-ts.ts';

const source = new URL('../../contracts/openapi.json', import.meta.url);
const target = new URL('../src/openapi-types.ts', import.meta.url);
writeFileSync(target, generateTypes(JSON.parse(readFileSync(source, 'utf8'))));
process.stdout.write(`wrote ${target.pathname}\n`);
