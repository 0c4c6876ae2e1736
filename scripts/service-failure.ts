// Says why a service of scripts/start.sh exited before it was ready: the line of its log that tells,
// that is the last fatal or error line of its JSON log (the message, and the error's message without
// its stack), else the first line of a Node error, else its last line. Usage: node
// scripts/service-failure.ts <log file>
import { readFileSync } from 'node:fs';

const lines = readFileSync(process.argv[2]!, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '');

function reasonIn(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
    if ((entry.level ?? 0) < 50) return undefined;
    return [entry.msg, entry.err?.message].filter(Boolean).join(': ');
  } catch {
    return undefined;
  }
}

const reason =
  lines.map(reasonIn).findLast((found) => found !== undefined) ??
  lines.find((line) => /^\w*Error\b|\bE[A-Z]{4,}\b/.test(line)) ??
  lines.at(-1) ??
  'it wrote nothing';
console.log(reason);
