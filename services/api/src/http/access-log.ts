import type { RequestHandler, Response } from 'express';
import pino from 'pino';
import type { Logger } from '@trips/runtime';
import { redactCredentials } from './redact.ts';
import type { ObserveRequest } from './request-metrics.ts';

/** What one access-log line says about a request. None of it can hold a credential (the path is redacted). */
export interface AccessFields {
  requestId: string | undefined;
  method: string;
  path: string;
  status: number;
  ms: number;
  keyId: string | undefined;
}

/**
 * Writes access-log lines exactly as `logger.info(fields, 'request')` would (same fields, order
 * and format, to the same destination, at the logger's current level), but with the line built
 * by hand: pino's generic path (walk the object, look up serializers and stringifiers per key)
 * cost more per request than everything else the line needs. Every string field goes through
 * JSON.stringify, so quotes, backslashes and control characters in a path are escaped as JSON
 * requires. The redaction paths are not needed: none of these fields can hold a credential.
 *
 * The logger's own bindings (pid, hostname, name) come from pino itself. A logger set up in a way
 * this does not reproduce (another message key, a stream that wants pino's metadata) gets its
 * lines from pino as before.
 */
export function accessLineWriter(logger: Logger): (fields: AccessFields) => void {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as { write(line: string): unknown } & Record<
    symbol,
    unknown
  >;
  const handBuilt =
    internals[pino.symbols.messageKeySym] === 'msg' &&
    internals[pino.symbols.timeSym] === pino.stdTimeFunctions.epochTime &&
    stream[pino.symbols.needsMetadataGsym] !== true &&
    typeof internals[pino.symbols.chindingsSym] === 'string';
  if (!handBuilt) {
    const lines = logger.child({}, { redact: [] });
    return (fields) => lines.info(fields, 'request');
  }
  const info = logger.levels.values.info!;
  const head = `{"level":${info},"time":`;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  return (f) => {
    if (logger.levelVal > info) return;
    stream.write(
      head +
        Date.now() +
        bindings +
        (f.requestId === undefined ? '' : ',"requestId":' + JSON.stringify(f.requestId)) +
        ',"method":' +
        JSON.stringify(f.method) +
        ',"path":' +
        JSON.stringify(f.path) +
        ',"status":' +
        f.status +
        ',"ms":' +
        f.ms +
        (f.keyId === undefined ? '' : ',"keyId":' + JSON.stringify(f.keyId)) +
        ',"msg":"request"}\n',
    );
  };
}

const STARTED = Symbol('access-log started');

/**
 * One line per request with its id, route, status and duration. Hand-written rather than
 * pino-http's default so that no header (and so no key) is ever part of the line. The same
 * finish hook feeds the latency histogram, so a request pays for one listener, not two; and it
 * is one function shared by all requests, with the start time kept on the response, rather than
 * a closure and a `once` wrapper made for each.
 */
export function accessLog(logger: Logger, observe?: ObserveRequest): RequestHandler {
  const write = accessLineWriter(logger);
  function finished(this: Response & { [STARTED]?: number }) {
    const req = this.req;
    const ms = performance.now() - this[STARTED]!;
    observe?.(req, this, ms / 1000);
    const requestId = this.getHeader('Request-Id');
    write({
      requestId: typeof requestId === 'string' ? requestId : undefined,
      method: req.method,
      // Inside a mounted router (/api/v1, /settings) req.path is relative to the mount. A key
      // pasted into the path is not written; the query string is not logged at all.
      path: redactCredentials((req.baseUrl + req.path).slice(0, 200)),
      status: this.statusCode,
      ms: Math.round(ms * 1000) / 1000,
      keyId: req.caller?.keyId,
    });
  }
  return (_req, res, next) => {
    (res as Response & { [STARTED]?: number })[STARTED] = performance.now();
    res.on('finish', finished);
    next();
  };
}
