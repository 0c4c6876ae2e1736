// The images (the Dockerfile's targets api, recorder, dispatcher, migrate and demo), checked
// without a Docker engine: statically against the package scripts and the workspace, and by
// replaying their build and start steps in a temporary directory, which proves that the production
// install holds every module each process imports and that Node can load the .ts sources there.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import {
  deployables,
  dockerfileProblems,
  dockerignore,
  dockerTarget,
  imageCommand,
  parseDockerfile,
  readJson,
  readText,
  root,
  startCommand,
  workspaceClosure,
  type Deployable,
} from './helpers.ts';

const pnpmVersion = readJson<{ packageManager: string }>('package.json').packageManager.replace(/^pnpm@/, '');

function expectationsFor(d: Deployable) {
  return {
    pkgDir: d.pkgDir,
    cmd: [...startCommand(d.pkgDir), ...d.extraArgs],
    closure: workspaceClosure(d.pkgDir),
    pnpmVersion,
    port: d.health?.default,
  };
}

const dockerfile = readText('Dockerfile');

describe("each of the Dockerfile's images follows the image policy", () => {
  test.each(Object.entries(deployables))('%s', (_name, d) => {
    expect(dockerfileProblems(dockerfile, d.target, expectationsFor(d))).toEqual([]);
  });

  test('the demo image too (its CMD is the demo receiver, not a package script)', () => {
    const problems = dockerfileProblems(dockerfile, 'demo', {
      ...expectationsFor(deployables.migrate),
      cmd: ['node', 'receiver.mts'],
    });
    // It runs from infra/demo and also copies the demo scripts from the context.
    expect(problems).toEqual([`WORKDIR /app/infra/demo is not /app/packages/tripctl`]);
  });

  test('the workspace closure in the images is what the package.json files say', () => {
    expect(workspaceClosure('services/api')).toEqual([
      'packages/broker',
      'packages/contracts',
      'packages/db',
      'packages/runtime',
      'packages/settings',
    ]);
    expect(workspaceClosure('packages/tripctl')).toEqual([
      'packages/broker',
      'packages/contracts',
      'packages/db',
      'packages/runtime',
      'packages/settings',
    ]);
  });
});

describe('the policy check fails on an image that breaks the policy', () => {
  // Each change below hits the first match in the file: the api target's, or what all share.
  const good = dockerfile;
  const expectations = expectationsFor(deployables.api);
  test.each([
    ['runs as root', good.replace('USER 1000:1000', 'USER root'), /USER root must be a non-zero numeric uid/],
    ['has no USER', good.replace(/^USER .*$/m, ''), /no USER/],
    [
      'uses another Node',
      good.replace('ARG NODE_IMAGE=node:24-slim', 'ARG NODE_IMAGE=node:22-slim'),
      /not node:24/,
    ],
    ['has no init process', good.replace(/^ENTRYPOINT .*$/m, ''), /not an init process/],
    [
      'starts through pnpm',
      good.replace(/^CMD \["node".*$/m, 'CMD ["pnpm", "start"]'),
      /not the start script/,
    ],
    [
      "drops the start script's V8 flags",
      good.replace(/^(CMD \["node"), "--max-semi-space-size=16", "--min-semi-space-size=16"/m, '$1'),
      /not the start script/,
    ],
    [
      'uses the shell form',
      good.replace(/^CMD \["node".*$/m, 'CMD node src/main.ts'),
      /not the start script/,
    ],
    ['installs devDependencies', good.replace(' --prod --filter', ' --filter'), /without --prod/],
    [
      'forgets a workspace package',
      good.replace(/^COPY --from=api-install \/workspace\/packages\/db .*$/m, ''),
      /the image copies/,
    ],
    [
      'carries pnpm',
      good.replace('FROM ${NODE_IMAGE} AS runtime', 'FROM workspace AS runtime'),
      /carries the build tools/,
    ],
    ['is not in the file', good.replace('AS api\n', 'AS app\n'), /no stage named api/],
  ])('%s', (_what, broken, message) => {
    expect(dockerfileProblems(broken, 'api', expectations).join('\n')).toMatch(message);
  });
});

describe('.dockerignore sends the workspace without installed modules or tests', () => {
  const included = dockerignore(readText('.dockerignore'));
  test.each([
    ['package.json', true],
    ['pnpm-lock.yaml', true],
    ['packages/db/src/index.ts', true],
    ['services/api/src/main.ts', true],
    ['infra/demo/receiver.mts', true],
    ['node_modules/.pnpm/x', false],
    ['services/api/node_modules/express/index.js', false],
    ['services/api/test/app.test.ts', false],
    ['.git/HEAD', false],
    ['.env', false],
    ['docs/api.md', false],
    ['k8s/base/kustomization.yaml', false],
  ])('%s → %s', (path, expected) => {
    expect(included(path)).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------
// Replaying the build of one target: the stages it needs, in order, each starting from the files
// and WORKDIR of the stage it is built FROM; their COPY and `pnpm install` (offline, from the store
// this machine's install filled), then the image's CMD in its WORKDIR.

/** The build context as Docker would send it. */
function contextFiles(): string[] {
  const included = dockerignore(readText('.dockerignore'));
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      // Never re-included by a later rule, and large: skip without walking.
      if (entry.name === 'node_modules' || entry.name === '.git' || entry.name === '.toolchain') continue;
      if (entry.isDirectory()) walk(path);
      else if (included(path)) files.push(path);
    }
  };
  walk('');
  return files;
}

/** COPY from the context: a file to a file (or into a directory ending in /), a directory's contents. */
function copyFromContext(files: string[], source: string, dest: string, destIsDir: boolean): void {
  const prefix = source.replace(/\/$/, '');
  for (const file of files) {
    let target: string;
    if (file === prefix) target = destIsDir ? join(dest, basename(file)) : dest;
    else if (prefix === '.' || file.startsWith(`${prefix}/`)) target = join(dest, relative(prefix, file));
    else continue;
    mkdirSync(dirname(target), { recursive: true });
    cpSync(join(root, file), target);
  }
}

interface Replayed {
  /** Runs a command in the runtime stage's WORKDIR, as the image would. */
  run(argv: string[], env: Record<string, string>): { status: number | null; output: string };
  dir: string;
}

function replayBuild(target: string, files: string[]): Replayed {
  const dir = mkdtempSync(join(tmpdir(), 'trips-image-'));
  const { chain, stages } = dockerTarget(parseDockerfile(dockerfile).stages, target);
  const fs = (stage: string, path: string) => join(dir, stage, path);
  const workdirs = new Map<string, string>();
  for (const stage of stages) {
    const name = stage.name!;
    mkdirSync(fs(name, '/'), { recursive: true });
    const parent = workdirs.get(stage.from);
    if (parent !== undefined)
      cpSync(join(dir, stage.from), join(dir, name), { recursive: true, verbatimSymlinks: true });
    let workdir = parent ?? '/';
    for (const i of stage.instructions) {
      if (i.keyword === 'WORKDIR') {
        workdir = i.args[0]!.startsWith('/') ? i.args[0]! : join(workdir, i.args[0]!);
        mkdirSync(fs(name, workdir), { recursive: true });
      } else if (i.keyword === 'COPY') {
        const sources = i.args.slice(0, -1);
        const target = i.args.at(-1)!;
        const to = target.startsWith('/') ? target : join(workdir, target);
        for (const source of sources) {
          if (i.flags.from != null) {
            cpSync(fs(i.flags.from, source), fs(name, to), { recursive: true, verbatimSymlinks: true });
          } else {
            copyFromContext(files, source, fs(name, to), target.endsWith('/'));
          }
        }
      } else if (i.keyword === 'RUN' && i.args[0] === 'pnpm' && i.args[1] === 'install') {
        // The only RUN that shapes the image's files: the others install pnpm, fill the store
        // (pnpm fetch) and install OS packages, which this machine already has.
        const args = i.args.slice(1).map((a) => a.replace(/^"|"$/g, ''));
        const result = spawnSync('pnpm', [...args, '--reporter=silent'], {
          cwd: fs(name, workdir),
          encoding: 'utf8',
        });
        if (result.status !== 0) {
          throw new Error(`${target}: pnpm ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
        }
      }
    }
    workdirs.set(name, workdir);
  }
  const workdir = workdirs.get(target)!;
  const env = Object.fromEntries(
    chain
      .flatMap((s) => s.instructions)
      .filter((i) => i.keyword === 'ENV')
      .flatMap((i) => i.args.map((a) => a.split('=') as [string, string])),
  );
  return {
    dir,
    run(argv, extra) {
      // Absolute paths are the image's: map them into the replayed runtime stage.
      const [command, ...rest] = argv.map((a) => (a.startsWith('/') ? fs(target, a) : a));
      const result = spawnSync(command === 'node' ? process.execPath : command!, rest, {
        cwd: fs(target, workdir),
        // Nothing from this machine's environment: only what the image and the test set.
        env: { PATH: process.env.PATH ?? '', ...env, ...extra },
        encoding: 'utf8',
        timeout: 20_000,
      });
      return { status: result.status, output: `${result.stdout}${result.stderr}` };
    },
  };
}

// A bad setting stops each process before it opens any connection, naming the variable. Getting
// that far proves the whole static import graph loaded (ESM links every import before running).
const startsUntilConfig: Record<string, { env: Record<string, string>; expect: RegExp }> = {
  api: { env: { PORT: 'not-a-port' }, expect: /PORT/ },
  recorder: { env: { RECORDER_HEALTH_PORT: 'not-a-port' }, expect: /RECORDER_HEALTH_PORT/ },
  dispatcher: { env: { DISPATCHER_HEALTH_PORT: 'not-a-port' }, expect: /DISPATCHER_HEALTH_PORT/ },
  migrate: { env: { DATABASE_URL: 'not-a-url' }, expect: /DATABASE_URL/ },
};

describe('replaying each image build: the production install runs the package', () => {
  const files = contextFiles();
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test.each(Object.entries(deployables))(
    '%s',
    (name, d) => {
      const image = replayBuild(d.target, files);
      dirs.push(image.dir);
      const { status, output } = image.run(imageCommand(d.target)!, startsUntilConfig[name]!.env);
      expect(status).not.toBe(0);
      expect(output).not.toMatch(/ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING/);
      expect(output).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find (package|module)/);
      expect(output).toMatch(startsUntilConfig[name]!.expect);
    },
    120_000,
  );

  test('demo: tripctl and the demo scripts load', () => {
    const image = replayBuild('demo', files);
    dirs.push(image.dir);
    const help = image.run(['node', '/app/packages/tripctl/src/main.ts', '--help'], {});
    expect(help.output).toMatch(/Usage: tripctl/);
    expect(help.status).toBe(0);
    // No demo state yet: the receiver stops at reading it, after loading.
    const receiver = image.run(['node', 'receiver.mts'], { DEMO_DIR: '/nowhere' });
    expect(receiver.output).toMatch(/ENOENT.*demo\.json/);
  }, 120_000);
});
