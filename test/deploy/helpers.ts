// Shared by the deployment checks (test/deploy/*.test.ts). There is no Docker engine and no cluster
// here, so the Dockerfile, docker-compose.yml and the Kustomize output are checked statically,
// against the package scripts and against the settings each service's config actually reads.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';
import { ConfigError, SETTINGS } from '@trips/runtime';
import { readConfig as apiConfig } from '../../services/api/src/config.ts';
import { readConfig as recorderConfig } from '../../services/recorder/src/config.ts';
import { readConfig as dispatcherConfig } from '../../services/dispatcher/src/config.ts';
import { readConfig as tripctlConfig, defaultBaseUrl } from '../../packages/tripctl/src/config.ts';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const readText = (path: string) => readFileSync(join(root, path), 'utf8');
export const readJson = <T = any>(path: string): T => JSON.parse(readText(path)) as T;

type Env = Record<string, string | undefined>;

/** What each deployable is: its package, its image, how it is started and the settings it owns. */
export interface Deployable {
  /** Workspace directory of the package the image runs. */
  pkgDir: string;
  /** Its image's target in the Dockerfile (`docker build --target`). */
  target: string;
  /** Arguments after the package's start script (the migrate image runs `tripctl migrate`). */
  extraArgs: string[];
  /** Parses an environment the way the process does at start; throws a ConfigError naming bad values. */
  parse: (env: Env) => unknown;
  /** The port its /healthz and /readyz answer on, and the setting that moves it. */
  health?: { env: string; default: number };
  /** The setting that bounds its graceful stop after SIGTERM, and its default. */
  stopDeadline?: { env: string; default: string };
  /** Settings it cannot do without in a deployment (no default fits outside a laptop). */
  required: string[];
}

export const deployables: Record<'api' | 'recorder' | 'dispatcher' | 'migrate', Deployable> = {
  api: {
    pkgDir: 'services/api',
    target: 'api',
    extraArgs: [],
    parse: (env) => apiConfig(env),
    health: { env: 'PORT', default: SETTINGS.PORT.default },
    stopDeadline: { env: 'API_SHUTDOWN_DEADLINE', default: SETTINGS.API_SHUTDOWN_DEADLINE.default },
    required: ['DATABASE_URL', 'REDIS_URL'],
  },
  recorder: {
    pkgDir: 'services/recorder',
    target: 'recorder',
    extraArgs: [],
    parse: (env) => recorderConfig(env),
    health: { env: 'RECORDER_HEALTH_PORT', default: SETTINGS.RECORDER_HEALTH_PORT.default },
    stopDeadline: { env: 'RECORDER_STOP_TIMEOUT', default: SETTINGS.RECORDER_STOP_TIMEOUT.default },
    required: ['DATABASE_URL', 'AMQP_URL'],
  },
  dispatcher: {
    pkgDir: 'services/dispatcher',
    target: 'dispatcher',
    extraArgs: [],
    parse: (env) => dispatcherConfig(env),
    health: { env: 'DISPATCHER_HEALTH_PORT', default: SETTINGS.DISPATCHER_HEALTH_PORT.default },
    stopDeadline: { env: 'DISPATCHER_STOP_TIMEOUT', default: SETTINGS.DISPATCHER_STOP_TIMEOUT.default },
    required: ['DATABASE_URL', 'AMQP_URL'],
  },
  migrate: {
    pkgDir: 'packages/tripctl',
    target: 'migrate',
    extraArgs: ['migrate'],
    parse: (env) => [tripctlConfig(env), defaultBaseUrl(env)],
    required: ['DATABASE_URL'],
  },
};

export const services = ['api', 'recorder', 'dispatcher'] as const;

/**
 * The names a deployable's config reads, found by running its own parser over a recording
 * environment, so the list can never drift from config.ts.
 */
export function settingsRead(d: Deployable): Set<string> {
  return namesRead(d.parse);
}

/**
 * The names `parse` reads from the environment it is given, each set as `values` says (unset
 * otherwise); a parse that refuses what it read still tells every name it read.
 */
export function namesRead(parse: (env: Env) => unknown, values: Env = {}): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as Env, {
    get(_target, name) {
      if (typeof name !== 'string') return undefined;
      read.add(name);
      return values[name];
    },
  });
  try {
    parse(env);
  } catch (error) {
    // A setting with no default (tripctl's DATABASE_URL) is refused once every name has been read.
    if (!(error instanceof ConfigError)) throw error;
  }
  return read;
}

/** The package's start script as argv, e.g. `node src/main.ts` → ['node', 'src/main.ts']. */
export function startCommand(pkgDir: string): string[] {
  const script = readJson<{ scripts?: { start?: string } }>(`${pkgDir}/package.json`).scripts?.start;
  if (!script) throw new Error(`${pkgDir}/package.json has no start script`);
  return script.trim().split(/\s+/);
}

/** The workspace packages a package imports, transitively (their src/ must be in its image). */
export function workspaceClosure(pkgDir: string): string[] {
  // The workspace's packages (pnpm-workspace.yaml: packages/*, services/*) by name.
  const byName = new Map<string, string>();
  for (const group of ['packages', 'services']) {
    for (const entry of readdirSync(join(root, group), { withFileTypes: true })) {
      const dir = `${group}/${entry.name}`;
      if (entry.isDirectory() && existsSync(join(root, dir, 'package.json')))
        byName.set(packageName(dir), dir);
    }
  }
  const seen = new Set<string>();
  const visit = (dir: string) => {
    const deps =
      readJson<{ dependencies?: Record<string, string> }>(`${dir}/package.json`).dependencies ?? {};
    for (const [name, range] of Object.entries(deps)) {
      const depDir = byName.get(name);
      if (!range.startsWith('workspace:') || !depDir || seen.has(depDir)) continue;
      seen.add(depDir);
      visit(depDir);
    }
  };
  visit(pkgDir);
  return [...seen].sort();
}

function packageName(pkgDir: string): string {
  return readJson<{ name: string }>(`${pkgDir}/package.json`).name;
}

/** `500ms`, `20s`, `1m`, `2h`, `3d` → milliseconds (the D9 duration format). */
export function durationMs(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value.trim());
  if (!match) throw new Error(`not a duration: ${value}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms'];
  return Number(match[1]) * unit;
}

// ---------------------------------------------------------------------------------------------
// The Dockerfile: one target per image

interface DockerInstruction {
  keyword: string;
  args: string[];
  /** The exec (JSON) form's strings, when the instruction is written that way. */
  json?: string[];
  flags: Record<string, string | null>;
}

export interface DockerStage {
  name?: string;
  /** The base image with build arguments resolved from their defaults. */
  from: string;
  instructions: DockerInstruction[];
}

export function parseDockerfile(text: string): { args: Record<string, string>; stages: DockerStage[] } {
  const args: Record<string, string> = {};
  const stages: DockerStage[] = [];
  const resolve = (value: string) =>
    value.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a?: string, b?: string) => args[(a ?? b)!] ?? whole);
  for (const instruction of DockerfileParser.parse(text).getInstructions()) {
    const keyword = instruction.getKeyword();
    const values = instruction.getArguments().map((a) => a.getValue());
    const flags = Object.fromEntries(
      ('getFlags' in instruction ? (instruction as any).getFlags() : []).map((f: any) => [
        f.getName(),
        f.getValue(),
      ]),
    );
    const json: string[] | undefined =
      'getJSONStrings' in instruction
        ? (instruction as any).getJSONStrings().map((s: any) => s.getJSONValue())
        : undefined;
    if (keyword === 'FROM') {
      stages.push({ from: resolve(values[0]!), name: values[2], instructions: [] });
      continue;
    }
    if (keyword === 'ARG' && stages.length === 0) {
      for (const value of values) {
        const [name, ...rest] = value.split('=');
        if (rest.length) args[name!] = rest.join('=');
      }
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${keyword} before the first FROM`);
    stage.instructions.push({ keyword, args: values, json: json?.length ? json : undefined, flags });
  }
  return { args, stages };
}

/** What `docker build --target` builds of a Dockerfile. */
export interface DockerTarget {
  /** The image's own stage and the stages it is built FROM, the base first: what the image holds. */
  chain: DockerStage[];
  /** Every stage the build runs for it, in the file's order: the chain and what it copies from. */
  stages: DockerStage[];
}

export function dockerTarget(all: DockerStage[], target: string): DockerTarget {
  const byName = new Map(all.filter((s) => s.name).map((s) => [s.name!, s]));
  const stageNamed = (name: string) => {
    const stage = byName.get(name);
    if (!stage) throw new Error(`no stage named ${name}`);
    return stage;
  };
  const chainOf = (stage: DockerStage): DockerStage[] =>
    byName.has(stage.from) ? [...chainOf(byName.get(stage.from)!), stage] : [stage];
  const needed = new Set<DockerStage>();
  const visit = (stage: DockerStage) => {
    if (needed.has(stage)) return;
    needed.add(stage);
    if (byName.has(stage.from)) visit(byName.get(stage.from)!);
    for (const i of stage.instructions) {
      if (i.keyword === 'COPY' && i.flags.from != null) visit(stageNamed(i.flags.from));
    }
  };
  const own = stageNamed(target);
  visit(own);
  return { chain: chainOf(own), stages: all.filter((s) => needed.has(s)) };
}

const last = (instructions: DockerInstruction[], keyword: string) =>
  instructions.filter((i) => i.keyword === keyword).at(-1);

/** The command an image of the repository's Dockerfile runs (its CMD, exec form). */
export function imageCommand(target: string): string[] | undefined {
  const { chain } = dockerTarget(parseDockerfile(readText('Dockerfile')).stages, target);
  return last(
    chain.flatMap((s) => s.instructions),
    'CMD',
  )?.json;
}

/** The policy every image follows; answers the problems found (none: the target is fine). */
export function dockerfileProblems(
  text: string,
  target: string,
  expect: { pkgDir: string; cmd: string[]; closure: string[]; pnpmVersion: string; port?: number },
): string[] {
  const problems: string[] = [];
  const all = parseDockerfile(text).stages;
  if (!all.some((s) => s.name === target)) return [`no stage named ${target}`];
  const { chain, stages } = dockerTarget(all, target);
  const stageNames = new Set(all.map((s) => s.name));
  for (const stage of stages) {
    if (!stageNames.has(stage.from) && !/^node:24(?:[.-]|$)/.test(stage.from)) {
      problems.push(`base image ${stage.from} is not node:24`);
    }
  }
  // What the image holds: its stage and those it is built FROM.
  const image = chain.flatMap((s) => s.instructions);
  if (image.some((i) => i.keyword === 'RUN' && i.args.some((a) => /^"?pnpm(@|$)/.test(a)))) {
    problems.push('the image carries the build tools: pnpm must run in stages it only copies from');
  }

  const user = last(image, 'USER')?.args[0];
  if (!user) problems.push('no USER: the image would run as root');
  else if (!/^[1-9]\d*(?::\d+)?$/.test(user)) {
    problems.push(`USER ${user} must be a non-zero numeric uid (runAsNonRoot can only verify numbers)`);
  }

  const entrypoint = last(image, 'ENTRYPOINT');
  const init = entrypoint?.json?.[0] ?? '';
  if (!/\/(tini|dumb-init)$/.test(init)) {
    problems.push(`ENTRYPOINT ${JSON.stringify(entrypoint?.args)} is not an init process in exec form`);
  } else {
    const installed = image.some((i) => i.keyword === 'RUN' && i.args.includes(init.split('/').at(-1)!));
    if (!installed) problems.push(`${init} is not installed in the image`);
  }

  const cmd = last(image, 'CMD')?.json;
  if (JSON.stringify(cmd) !== JSON.stringify(expect.cmd)) {
    problems.push(`CMD ${JSON.stringify(cmd)} is not the start script ${JSON.stringify(expect.cmd)}`);
  }
  const workdir = last(image, 'WORKDIR')?.args[0];
  if (workdir !== `/app/${expect.pkgDir}`) problems.push(`WORKDIR ${workdir} is not /app/${expect.pkgDir}`);

  const install = stages
    .flatMap((s) => s.instructions)
    .find((i) => i.keyword === 'RUN' && i.args[0] === 'pnpm' && i.args[1] === 'install');
  const name = packageName(expect.pkgDir);
  if (!install) problems.push('no `pnpm install` of the package');
  else {
    for (const flag of ['--prod', '--frozen-lockfile']) {
      if (!install.args.includes(flag)) problems.push(`pnpm install without ${flag}`);
    }
    const filter = install.args[install.args.indexOf('--filter') + 1]?.replace(/^"|"$/g, '');
    if (filter !== `${name}...`) problems.push(`pnpm install --filter ${filter}, expected "${name}..."`);
  }
  const pnpm = stages
    .flatMap((s) => s.instructions)
    .find((i) => i.keyword === 'ARG' && i.args[0]?.startsWith('PNPM_VERSION='));
  if (pnpm?.args[0] !== `PNPM_VERSION=${expect.pnpmVersion}`) {
    problems.push(
      `${pnpm?.args[0] ?? 'no PNPM_VERSION'} differs from packageManager pnpm@${expect.pnpmVersion}`,
    );
  }

  // The image takes node_modules and exactly the package with its workspace closure.
  const copied = image
    .filter((i) => i.keyword === 'COPY' && i.flags.from != null)
    .map((i) => i.args[0]!.replace(/^\/workspace\//, ''))
    .sort();
  const wanted = ['node_modules', ...expect.closure, expect.pkgDir].sort();
  if (JSON.stringify(copied) !== JSON.stringify(wanted)) {
    problems.push(`the image copies ${JSON.stringify(copied)}, expected ${JSON.stringify(wanted)}`);
  }
  if (expect.port !== undefined) {
    const exposed = last(image, 'EXPOSE')?.args[0];
    if (exposed !== String(expect.port)) problems.push(`EXPOSE ${exposed}, expected ${expect.port}`);
  }
  return problems;
}

/**
 * .dockerignore semantics, enough for ours: rules apply in order, the last one that matches a path
 * or one of its parent directories decides, `!` re-includes.
 */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const negated = line.startsWith('!');
      const pattern = (negated ? line.slice(1) : line).replace(/^\/+|\/+$/g, '');
      const source = pattern
        .split('/')
        .map((part) =>
          part === '**'
            ? '.*'
            : part
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\.\*\//g, '(?:.*/)?');
      return { negated, regex: new RegExp(`^${source}$`) };
    });
  return (path: string) => {
    const parts = path.split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const rule of rules) {
      if (prefixes.some((p) => rule.regex.test(p))) excluded = !rule.negated;
    }
    return !excluded;
  };
}
