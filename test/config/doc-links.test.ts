// Every relative link in the repository's Markdown, and every `docs/<page>.md#anchor` a manifest or
// source names (the alerts' runbook_url), reaches a file that exists and, with an anchor, a heading
// of that file: pages are cut and reorganised, and a link into a section that moved must fail here.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { readText, root } from '../deploy/helpers.ts';

const tracked = (...patterns: string[]) =>
  execFileSync('git', ['ls-files', '--', ...patterns], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces made hyphens. */
const slug = (heading: string) =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** The anchors of a Markdown file's headings, a repeated one numbered as GitHub numbers it. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, heading] of withoutFences(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

const withoutFences = (markdown: string) => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
const withoutCode = (markdown: string) => withoutFences(markdown).replace(/`[^`\n]*`/g, '');

/** The problem with one link from `from` (a path from the root), or undefined when it resolves. */
function problem(from: string, target: string): string | undefined {
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? from : normalize(join(dirname(from), decodeURIComponent(path)));
  if (!existsSync(join(root, file))) return `${target}: no file ${file}`;
  if (anchor === undefined || !file.endsWith('.md')) return undefined;
  if (!anchors(readText(file)).has(anchor)) return `${target}: no heading #${anchor} in ${file}`;
  return undefined;
}

test('every relative link in the Markdown reaches a file and a heading', () => {
  const problems: string[] = [];
  for (const file of tracked('*.md')) {
    for (const [, target] of withoutCode(readText(file)).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!) || target!.startsWith('//')) continue; // https:, mailto:
      const found = problem(file, target!);
      if (found) problems.push(`${file}: ${found}`);
    }
  }
  expect(problems).toEqual([]);
});

test('every docs/<page>.md#anchor named outside the Markdown reaches a heading', () => {
  const problems: string[] = [];
  for (const file of tracked('*.ts', '*.yaml', '*.yml', '*.json', '*.sh').filter(
    (f) => !f.startsWith('k8s/crds/'),
  )) {
    for (const [, page, anchor] of readText(file).matchAll(/\b(docs\/[\w/-]+\.md)#([\w-]+)/g)) {
      const found = problem('README.md', `${page}#${anchor}`);
      if (found) problems.push(`${file}: ${found}`);
    }
  }
  expect(problems).toEqual([]);
});

test('the anchors are GitHub’s', () => {
  expect([
    ...anchors(
      '# A `code` heading: with, punctuation\n## Fair delivery\n## Fair delivery\n```\n# not one\n```\n',
    ),
  ]).toEqual(['a-code-heading-with-punctuation', 'fair-delivery', 'fair-delivery-1']);
});
