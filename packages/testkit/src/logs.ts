import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@trips/runtime';

/**
 * Everything a service logged, through the services' own logger (so its redaction is what is
 * tested), for tests that assert what a log line holds or never holds.
 */
export class LogCapture {
  readonly lines: string[] = [];
  readonly logger: Logger;

  constructor(name = 'test') {
    this.logger = createLogger(
      name,
      'debug',
      new Writable({
        write: (chunk: Buffer, _encoding, done) => {
          this.lines.push(chunk.toString());
          done();
        },
      }),
    );
  }

  text(): string {
    return this.lines.join('');
  }
}
