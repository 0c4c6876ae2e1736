// docs/architecture.md draws which workspace imports which, in two diagrams under "Which imports
// which": the `dependencies` on the workspace's own packages (what a deployable's image installs),
// by floors, and what only tests use (`devDependencies`, and the test workspace's dependencies,
// since it runs nothing in production). Both are read here and held to every package.json the
// workspace has (pnpm-workspace.yaml): an arrow missing or extra, a workspace left out, or an arrow
// of the first diagram that does not point down a floor fails.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readJson, readText, root } from './helpers.ts';

/** Which workspace (by its directory) depends on which of ours (by its short name, e.g. `db`). */
type Arrows = Record<string, string[]>;

interface Diagram {
  arrows: Arrows;
  /** Each node's floor, for the diagram drawn by floors. */
  floors: Record<string, number>;
  /** Nodes drawn more than once. */
  repeated: string[];
}

/** The root package.json, in the tests-only diagram: jest's global setup and leak check. */
const ROOT = '(root)';
/** The workspace that holds the system tests and the benchmarks: all it depends on is for tests. */
const TEST_WORKSPACE = 'test';

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** Every workspace's directory, from pnpm-workspace.yaml (`dir/*` globs and plain directories). */
function workspaceDirs(): string[] {
  const { packages } = parse(readText('pnpm-workspace.yaml')) as { packages: string[] };
  return packages
    .flatMap((pattern) => {
      if (!pattern.endsWith('/*')) return [pattern];
      const parent = pattern.slice(0, -2);
      return readdirSync(join(root, parent), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => `${parent}/${entry.name}`);
    })
    .filter((dir) => existsSync(join(root, dir, 'package.json')))
    .sort();
}

/** The arrows the package.json files make: production ones, and those for tests only. */
function manifestArrows(): { production: Arrows; testsOnly: Arrows } {
  const dirs = workspaceDirs();
  const manifests = new Map<string, Manifest>(
    dirs.map((dir) => [dir, readJson<Manifest>(`${dir}/package.json`)]),
  );
  const shortName = new Map([...manifests].map(([dir, m]) => [m.name, dir.split('/').at(-1)!]));
  const ours = (deps: Record<string, string> = {}) =>
    Object.entries(deps)
      .filter(([, range]) => range.startsWith('workspace:'))
      .map(([name]) => shortName.get(name) ?? `${name} (not a workspace)`)
      .sort();
  const production: Arrows = {};
  const testsOnly: Arrows = {};
  const add = (arrows: Arrows, node: string, targets: string[]) => {
    if (targets.length > 0) arrows[node] = [...(arrows[node] ?? []), ...targets].sort();
  };
  for (const [dir, manifest] of manifests) {
    if (dir === TEST_WORKSPACE) add(testsOnly, dir, ours(manifest.dependencies));
    else production[dir] = ours(manifest.dependencies);
    add(testsOnly, dir, ours(manifest.devDependencies));
  }
  const rootManifest = readJson<Manifest>('package.json');
  add(testsOnly, ROOT, [...ours(rootManifest.dependencies), ...ours(rootManifest.devDependencies)]);
  return { production, testsOnly };
}

/**
 * One diagram: lines of segments three or more spaces apart, each `node ──► a, b` or a bare
 * `node`, a line opening with its floor's number or belonging to the floor above it.
 */
function parseDiagram(block: string): Diagram {
  const diagram: Diagram = { arrows: {}, floors: {}, repeated: [] };
  let floor = NaN;
  for (const line of block.split('\n')) {
    if (!line.trim()) continue;
    const [, number, rest] = /^\s*(\d+)?\s+(\S.*)$/.exec(line) ?? [];
    if (number) floor = Number(number);
    for (const segment of (rest ?? line).trim().split(/\s{3,}/)) {
      const [, node, targets] = /^(\S+)(?:\s+─+►\s+(.+))?$/.exec(segment) ?? [undefined, segment];
      if (node! in diagram.arrows) diagram.repeated.push(node!);
      diagram.arrows[node!] = targets ? targets.split(/,\s*/).sort() : [];
      diagram.floors[node!] = floor;
    }
  }
  return diagram;
}

/** The code blocks of a section of a Markdown page, in order. */
function codeBlocks(page: string, heading: string): string[] {
  const start = page.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const next = page.indexOf('\n## ', start + heading.length + 1);
  const section = page.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/^```\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** What is wrong with a page's diagrams against the package.json files, one line each. */
function problems(page: string): string[] {
  const [productionBlock, testsBlock] = codeBlocks(page, '## Which imports which');
  if (!productionBlock || !testsBlock) return ['"Which imports which" must hold two diagrams'];
  const drawn = parseDiagram(productionBlock);
  const drawnTests = parseDiagram(testsBlock);
  const { production, testsOnly } = manifestArrows();
  const found: string[] = [];
  const compare = (which: string, actual: Arrows, expected: Arrows) => {
    for (const node of new Set([...Object.keys(actual), ...Object.keys(expected)])) {
      const has = new Set(actual[node] ?? []);
      const should = new Set(expected[node] ?? []);
      if (!(node in actual)) found.push(`${which}: ${node} is not drawn`);
      else if (!(node in expected)) found.push(`${which}: ${node} is drawn but is no workspace of its kind`);
      for (const target of should)
        if (!has.has(target)) found.push(`${which}: ${node} → ${target} is missing`);
      for (const target of has) if (!should.has(target)) found.push(`${which}: ${node} → ${target} is extra`);
    }
  };
  compare('dependencies', drawn.arrows, production);
  compare('tests only', drawnTests.arrows, testsOnly);
  for (const node of [...drawn.repeated, ...drawnTests.repeated]) found.push(`${node} is drawn twice`);
  const floorOf = (short: string) =>
    Object.entries(drawn.floors).find(([node]) => node.split('/').at(-1) === short)?.[1];
  for (const [node, targets] of Object.entries(drawn.arrows)) {
    if (Number.isNaN(drawn.floors[node])) found.push(`dependencies: ${node} has no floor`);
    for (const target of targets) {
      const below = floorOf(target);
      if (below !== undefined && !(below < drawn.floors[node]!))
        found.push(`dependencies: ${node} → ${target} does not point down a floor`);
    }
  }
  return found;
}

const page = readText('docs/architecture.md');

test('both diagrams of docs/architecture.md are the package.json files', () => {
  expect(problems(page)).toEqual([]);
});

test('the diagrams name every workspace, the SDK and the examples among them', () => {
  const drawn = parseDiagram(codeBlocks(page, '## Which imports which')[0]!);
  expect(Object.keys(drawn.arrows).sort()).toEqual(workspaceDirs().filter((dir) => dir !== TEST_WORKSPACE));
  expect(drawn.arrows).toMatchObject({ 'packages/sdk': [], 'examples/receiver-express': [] });
});

describe('a diagram that has drifted fails', () => {
  const edit = (from: string, to: string) => {
    expect(page).toContain(from);
    return problems(page.replace(from, to));
  };

  test('an arrow missing', () => {
    expect(
      edit(
        'services/api ─────────► settings, broker, db, contracts, runtime',
        'services/api ─────────► settings, db, contracts, runtime',
      ),
    ).toEqual(['dependencies: services/api → broker is missing']);
  });

  test('an arrow extra', () => {
    expect(
      edit('packages/broker ──────► contracts, runtime', 'packages/broker ──────► contracts, db, runtime'),
    ).toEqual(['dependencies: packages/broker → db is extra']);
  });

  test('a workspace left out', () => {
    expect(edit('     packages/sdk', '')).toEqual(['dependencies: packages/sdk is not drawn']);
  });

  test('a test-only arrow missing', () => {
    expect(edit('services/api ─────────► dispatcher, testkit', 'services/api ─────────► testkit')).toEqual([
      'tests only: services/api → dispatcher is missing',
    ]);
  });

  test('an arrow that points up', () => {
    expect(edit(' 2  packages/broker', ' 3  packages/broker')).toEqual([
      'dependencies: packages/settings → broker does not point down a floor',
    ]);
  });
});
