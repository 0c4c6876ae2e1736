// Compares two V8 heap snapshots of one process, as `pnpm bench:soak` takes them
// (SOAK_HEAP_SNAPSHOTS): `node test/bench/heap-compare.ts <dir>` pairs each pid's first and last
// snapshot in <dir>; `node test/bench/heap-compare.ts <earlier> <later>` compares two files. For
// each constructor, the objects' count and retained size at both times, the largest changes first.
// A leak shows as a constructor whose count and retained size grow between the two; a heap that
// only churns shows none growing by more than the noise of what was in flight at each moment.
//
// Retained sizes as DevTools' summary gives them: the dominator tree from the snapshot's root
// (weak edges do not retain), an object's retained size its own plus everything it dominates, and a
// constructor's the sum over its objects not dominated by another of the same constructor (so
// nothing is counted twice).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface ByClass {
  count: Map<string, number>;
  retained: Map<string, number>;
  total: number;
}

function summarise(file: string): ByClass {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const { node_fields: nf, node_types: nt, edge_fields: ef, edge_types: et } = s.snapshot.meta;
  const N = nf.length;
  const E = ef.length;
  const [nType, nName, nSelf, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) =>
    nf.indexOf(f),
  ) as [number, number, number, number];
  const [eType, eTo] = ['type', 'to_node'].map((f) => ef.indexOf(f)) as [number, number];
  const weak = et[0].indexOf('weak');
  const count = s.nodes.length / N;
  const className = (i: number) => {
    const type = nt[0][s.nodes[i * N + nType]!]!;
    return type === 'object' || type === 'native' || type === 'synthetic'
      ? s.strings[s.nodes[i * N + nName]!]!
      : `(${type})`;
  };
  // Successors as index ranges into the edges; predecessors built from them (weak edges left out).
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0; i < count; i++) firstEdge[i + 1] = firstEdge[i]! + s.nodes[i * N + nEdges]! * E;
  const succ = (i: number, visit: (j: number) => void) => {
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += E)
      if (s.edges[e + eType] !== weak) visit(s.edges[e + eTo]! / N);
  };
  // Reverse postorder from the root (node 0), iteratively.
  const order = new Int32Array(count).fill(-1); // postorder number
  const post: number[] = [];
  const stack: number[] = [0];
  const cursor = new Uint32Array(count);
  const seen = new Uint8Array(count);
  seen[0] = 1;
  for (let i = 0; i < count; i++) cursor[i] = firstEdge[i]!;
  while (stack.length) {
    const i = stack.at(-1)!;
    let pushed = false;
    while (cursor[i]! < firstEdge[i + 1]!) {
      const e = cursor[i]!;
      cursor[i] = e + E;
      if (s.edges[e + eType] === weak) continue;
      const j = s.edges[e + eTo]! / N;
      if (!seen[j]) {
        seen[j] = 1;
        stack.push(j);
        pushed = true;
        break;
      }
    }
    if (!pushed) {
      stack.pop();
      order[i] = post.length;
      post.push(i);
    }
  }
  const preds: number[][] = Array.from({ length: count }, () => []);
  for (const i of post) succ(i, (j) => preds[j]!.push(i));
  // Cooper, Harvey and Kennedy's iterative dominators.
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let k = post.length - 2; k >= 0; k--) {
      const i = post[k]!;
      let d = -1;
      for (const p of preds[i]!) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
      if (d !== idom[i]) {
        idom[i] = d;
        changed = true;
      }
    }
  }
  // Retained sizes: postorder visits every node after all it dominates.
  const retained = new Float64Array(count);
  for (const i of post) retained[i]! += s.nodes[i * N + nSelf]!;
  for (const i of post) if (i !== 0) retained[idom[i]!]! += retained[i]!;
  // A constructor's retained size: its objects with no dominator of the same constructor.
  const children: number[][] = Array.from({ length: count }, () => []);
  for (const i of post) if (i !== 0) children[idom[i]!]!.push(i);
  const out: ByClass = { count: new Map(), retained: new Map(), total: retained[0]! };
  const onPath = new Map<string, number>();
  const walk: [number, boolean][] = [[0, false]];
  while (walk.length) {
    const [i, leaving] = walk.pop()!;
    const name = className(i);
    if (leaving) {
      onPath.set(name, onPath.get(name)! - 1);
      continue;
    }
    if (i !== 0) {
      out.count.set(name, (out.count.get(name) ?? 0) + 1);
      if (!onPath.get(name)) out.retained.set(name, (out.retained.get(name) ?? 0) + retained[i]!);
    }
    onPath.set(name, (onPath.get(name) ?? 0) + 1);
    walk.push([i, true]);
    for (const c of children[i]!) walk.push([c, false]);
  }
  return out;
}

const kb = (b: number) => `${(b / 1024).toFixed(0)} kB`;

function compare(earlier: string, later: string, top = 15): void {
  const a = summarise(earlier);
  const b = summarise(later);
  console.log(`${earlier}\n→ ${later}\nreachable heap: ${kb(a.total)} → ${kb(b.total)}`);
  const names = new Set([...a.retained.keys(), ...b.retained.keys()]);
  const rows = [...names]
    .map((n) => ({ n, ra: a.retained.get(n) ?? 0, rb: b.retained.get(n) ?? 0 }))
    .sort(
      (x, y) => Math.abs(y.rb - y.ra) - Math.abs(x.rb - x.ra) || Math.max(y.ra, y.rb) - Math.max(x.ra, x.rb),
    )
    .slice(0, top);
  for (const { n, ra, rb } of rows)
    console.log(
      `  ${n.slice(0, 40).padEnd(40)} retained ${kb(ra).padStart(9)} → ${kb(rb).padStart(9)} ` +
        `(${rb >= ra ? '+' : ''}${kb(rb - ra)}); count ${a.count.get(n) ?? 0} → ${b.count.get(n) ?? 0}`,
    );
}

const args = process.argv.slice(2);
if (args.length === 2) compare(args[0]!, args[1]!);
else if (args.length === 1) {
  // Heap.<date>.<time>.<pid>.<thread>.<seq>.heapsnapshot: by pid, in time order.
  const byPid = new Map<string, string[]>();
  for (const f of readdirSync(args[0]!)
    .filter((f) => f.endsWith('.heapsnapshot'))
    .sort()) {
    const pid = f.split('.')[3]!;
    byPid.set(pid, [...(byPid.get(pid) ?? []), join(args[0]!, f)]);
  }
  for (const files of byPid.values()) if (files.length >= 2) compare(files[0]!, files.at(-1)!);
} else throw new Error('usage: heap-compare.ts <dir> | <earlier.heapsnapshot> <later.heapsnapshot>');
