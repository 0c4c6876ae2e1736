// `pnpm docs:settings`: writes the configuration tables of docs/operations.md and README.md from
// the settings table (settings-markdown.ts says where and how).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { settingsDocs } from './settings-markdown.ts';

const root = join(import.meta.dirname, '..');
for (const { path, current, wanted } of await settingsDocs(root)) {
  if (wanted === current) continue;
  writeFileSync(join(root, path), wanted);
  process.stdout.write(`wrote ${path}\n`);
}
