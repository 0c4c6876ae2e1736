import type { RedeliveryProgress } from '@trips/settings';

const WIDTH = 30;

/**
 * Progress on stderr, so stdout keeps only the result (and --json stays parseable): a bar redrawn
 * in place on a terminal, plain "done/total" lines otherwise (logs, pipes, CI).
 */
export function progressReporter(stream: { write(text: string): unknown; isTTY?: boolean }, verb: string) {
  let drawn = false;
  let last = -1;
  return {
    update: ({ done, total }: RedeliveryProgress) => {
      if (stream.isTTY) {
        const filled = total === 0 ? WIDTH : Math.round((done / total) * WIDTH);
        stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${done}/${total} ${verb}`);
        drawn = true;
      } else if (done !== last) {
        stream.write(`${verb} ${done}/${total}\n`);
        last = done;
      }
    },
    end: () => {
      if (drawn) stream.write('\n');
    },
  };
}
