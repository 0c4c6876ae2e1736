// autocannon ships no types and @types/autocannon lags its major; only what test/bench uses.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface RequestParams {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    [key: string]: unknown;
  }

  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    overallRate?: number;
    headers?: Record<string, string>;
    requests?: { setupRequest?: (req: RequestParams, context: object) => RequestParams }[];
  }

  interface Result {
    /** Seconds the run lasted. */
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, bytes: number, ms: number) => void,
    ): this;
  }

  function autocannon(options: Options): Instance;
  export default autocannon;
}
