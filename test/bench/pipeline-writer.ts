// The host application of `pnpm bench:pipeline`, in its own process so its CPU is counted apart
// from the pipeline it feeds: one trip per INSERT (each its own transaction, as the host writes
// them; docs/schema.md), started on an even schedule whatever the earlier ones are doing, over 4
// connections. Driven over IPC:
//   parent → { id, op: 'write', rate, seconds, idPrefix }  ← { id, committed: [tripId, at][], failures }
// `at` is when the INSERT's answer arrived (epoch ms, sub-millisecond), a loopback round trip after
// the commit itself, on the same clock as the receiver's arrivals. BENCH_TABLE is `trips`, or the
// bare pipeline's `bare.trips` of the same shape.
import { createPool } from '@trips/db';

const table = process.env.BENCH_TABLE === 'bare.trips' ? 'bare.trips' : 'trips';
const agencyId = process.env.BENCH_AGENCY_ID!;
const pool = createPool(process.env.DATABASE_URL!, { max: 4, applicationName: 'bench-writer' });
const text = `INSERT INTO ${table} (id, agency_id, title, num_days) VALUES ($1, $2, 'Bench', 3)`;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Write {
  id: number;
  op: 'write';
  rate: number;
  seconds: number;
  idPrefix: string;
}

async function write({ rate, seconds, idPrefix }: Write) {
  const committed: [string, number][] = [];
  let failures = 0;
  const total = Math.round(rate * seconds);
  const writes: Promise<void>[] = [];
  const started = performance.now();
  for (let written = 0; written < total; await sleep(1)) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
    for (; written < due; written++) {
      const id = `${idPrefix}${written}`;
      writes.push(
        pool.query(text, [id, agencyId]).then(
          () => void committed.push([id, now()]),
          (error: Error) => {
            failures++;
            if (failures <= 3) console.error(`insert ${id} failed: ${error.message}`);
          },
        ),
      );
    }
  }
  await Promise.all(writes);
  return { committed, failures };
}

process.on('message', (command: Write) => {
  void write(command).then((result) => process.send!({ id: command.id, ...result }));
});
const exit = () => void pool.end().finally(() => process.exit(0));
process.on('disconnect', exit);
process.on('SIGTERM', exit);
// The pool opens its 4 connections before the first window, so none is opened while measured.
await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT 1')));
process.send!({ ready: true });
