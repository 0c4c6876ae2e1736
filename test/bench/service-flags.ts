// A service's node flags as production starts it: its package's start script (which the image's
// CMD repeats; test/deploy checks), less `node` and the script. V8 sizes its young generation from
// them, so a benchmark that started the services without them would measure another collector.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Service = 'api' | 'recorder' | 'dispatcher';

export const THIS_CHECKOUT = fileURLToPath(new URL('../..', import.meta.url));

/** `tree`: the checkout whose services run (bench:pipeline's baseline runs another commit's). */
export function startFlags(service: Service, tree = THIS_CHECKOUT): string[] {
  const pkg = join(tree, 'services', service, 'package.json');
  const start = (JSON.parse(readFileSync(pkg, 'utf8')) as { scripts: { start: string } }).scripts.start;
  return start.trim().split(/\s+/).slice(1, -1);
}
