import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { collectSignedDeliveries, type DeliveryRun, type SignedDelivery } from './signed-deliveries.ts';

// docs/webhooks.md's receivers in other languages ("Verify in your language"), taken from the page
// as it is, run with Debian's interpreters against real deliveries replayed byte for byte: each
// accepts every delivery its secret (in either form) signed and, where it checks ed25519, every one
// its public key signed; each refuses a tampered body, a wrong secret or key, and a stale time.
// An interpreter scripts/interpreters.sh could not have outside CI is named in SKIP_RECIPES, and its
// recipe is skipped (it said so, with the package to install); in CI it is never missing.

const run = promisify(execFile);
const page = readFileSync(new URL('../../../docs/webhooks.md', import.meta.url), 'utf8');
const section = page.slice(page.indexOf('## Verify in your language'), page.indexOf('## Duplicates'));
const recipe = (language: string) => {
  const code = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(section)?.[1];
  if (!code) throw new Error(`docs/webhooks.md has no ${language} recipe under "Verify in your language"`);
  return code;
};

interface Recipe {
  interpreter: string;
  file: string;
  /** Made once before the receivers start (a compiler's build). */
  build?: [string, string[]];
  start: (port: number) => [string, string[]];
  /** Whether it checks v1a with WEBHOOK_PUBLIC_KEY. */
  ed25519: boolean;
}
const RECIPES: Record<string, Recipe> = {
  python: {
    interpreter: 'python3',
    file: 'receiver.py',
    start: () => ['python3', ['receiver.py']],
    ed25519: false,
  },
  php: {
    interpreter: 'php',
    file: 'receiver.php',
    start: (port) => ['php', ['-S', `127.0.0.1:${port}`, 'receiver.php']],
    ed25519: true,
  },
  ruby: { interpreter: 'ruby', file: 'receiver.rb', start: () => ['ruby', ['receiver.rb']], ed25519: true },
  go: {
    interpreter: 'go',
    file: 'receiver.go',
    build: ['go', ['build', '-o', 'receiver', 'receiver.go']],
    start: () => ['./receiver', []],
    ed25519: true,
  },
};
/**
 * The Go recipe is built with the standard library only: no module proxy, no toolchain download,
 * and a build cache of its own when no HOME says where the user's is.
 */
const GO_OFFLINE = {
  GOPROXY: 'off',
  GOTOOLCHAIN: 'local',
  GOFLAGS: '',
  ...(!process.env.HOME && !process.env.GOCACHE && { GOCACHE: join(tmpdir(), 'trips-recipes-go-cache') }),
};
const skipped = new Set((process.env.SKIP_RECIPES ?? '').split(/[\s,]+/).filter(Boolean));

let deliveries: DeliveryRun;
beforeAll(async () => {
  deliveries = await collectSignedDeliveries();
}, 90_000);
afterAll(() => deliveries?.stop());

/** A free port: one the system gave and took back. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const accepting = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** The recipe listening with `env`, for the time of `use`; stopped after, whatever happens. */
async function withReceiver<T>(
  dir: string,
  recipe: Recipe,
  env: Record<string, string>,
  use: (port: number) => Promise<T>,
): Promise<T> {
  const port = await freePort();
  const [command, args] = recipe.start(port);
  const child: ChildProcess = spawn(command, args, {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME ?? dir, PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exited = once(child, 'exit');
  try {
    const deadline = Date.now() + 20_000;
    while (!(await accepting(port))) {
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`the ${recipe.file} receiver did not start: ${errors.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return await use(port);
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/** Replays a delivery (its headers, and its body or another) to a receiver: its status and reason. */
async function replay(port: number, delivery: SignedDelivery, body = delivery.request.body) {
  const headers = Object.entries(delivery.request.headers)
    .filter(([name]) => !HOP_BY_HOP.has(name))
    .map(([name, value]) => [name, String(value)] as [string, string]);
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers, body });
  return `${res.status} ${(await res.text()).trim()}`.trim();
}

const tampered = (body: string) => body.replace('"object":"event"', '"object":"Event"');

describe.each(Object.keys(RECIPES))('the %s recipe', (language) => {
  const r = RECIPES[language]!;
  const maybe = skipped.has(r.interpreter) ? test.skip : test;

  maybe(
    'accepts every real delivery its secret or key signed, and refuses tampered, wrongly keyed and stale ones',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), `trips-recipe-${language}-`));
      const tally = { accepted: 0, refused: 0 };
      const expectAnswer = async (port: number, d: SignedDelivery, expected: string, body?: string) => {
        expect([d.kind, await replay(port, d, body)]).toEqual([d.kind, expected]);
        tally[expected === '204' ? 'accepted' : 'refused']++;
      };
      try {
        writeFileSync(join(dir, r.file), recipe(language));
        if (r.build)
          await run(r.build[0], r.build[1], {
            cwd: dir,
            env: { ...process.env, ...GO_OFFLINE },
            timeout: 180_000,
          });
        const all = deliveries.deliveries;
        const first = all[0]!.secrets[0]!;
        const rotated = all.at(-1)!.secrets[0]!;

        // The first secret, as D7 writes it: every delivery; none with its body changed.
        await withReceiver(dir, r, { WEBHOOK_SECRET: first.secret }, async (port) => {
          for (const d of all) {
            await expectAnswer(port, d, '204');
            await expectAnswer(port, d, '400 no matching signature', tampered(d.request.body));
          }
        });
        // The rotated secret, in its Standard Webhooks form: only what it signed.
        await withReceiver(dir, r, { WEBHOOK_SECRET: rotated.standard }, async (port) => {
          for (const d of all)
            await expectAnswer(port, d, d.secrets.includes(rotated) ? '204' : '400 no matching signature');
        });
        await withReceiver(dir, r, { WEBHOOK_SECRET: deliveries.stranger.standard }, async (port) => {
          for (const d of all) await expectAnswer(port, d, '400 no matching signature');
        });
        if (r.ed25519) {
          const publicKey = all.find((d) => d.publicKeys.length > 0)!.publicKeys[0]!;
          await withReceiver(
            dir,
            r,
            { WEBHOOK_SECRET: first.secret, WEBHOOK_PUBLIC_KEY: publicKey },
            async (port) => {
              for (const d of all)
                await expectAnswer(
                  port,
                  d,
                  d.publicKeys.includes(publicKey) ? '204' : '400 no matching signature',
                );
            },
          );
        }
        // With a tolerance of a second, two seconds after the last delivery, every one is stale.
        const latest = Math.max(...all.map((d) => Number(d.request.headers['webhook-timestamp'])));
        while (Date.now() / 1000 < latest + 3) await new Promise((resolve) => setTimeout(resolve, 100));
        await withReceiver(
          dir,
          r,
          { WEBHOOK_SECRET: first.secret, WEBHOOK_TOLERANCE_SECONDS: '1' },
          async (port) => {
            for (const d of all) await expectAnswer(port, d, '400 stale timestamp');
          },
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      // 7 deliveries: accepted 7 with the first secret, 3 with the rotated one, 2 with the first
      // public key; refused 7 tampered, 4 not signed by the rotated secret, 7 by a stranger, 5
      // without that key's v1a, and 7 stale.
      expect(tally).toEqual(r.ed25519 ? { accepted: 12, refused: 30 } : { accepted: 10, refused: 25 });
    },
    240_000,
  );
});
