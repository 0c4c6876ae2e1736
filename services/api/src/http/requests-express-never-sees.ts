import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_CODES } from '@trips/contracts';
import type { Logger } from '@trips/runtime';
import { ApiError, errorBody } from '../errors.ts';
import { newRequestId } from './request-id.ts';
import { JSON_CONTENT_TYPE } from './send-json.ts';

// Not `import { STATUS_CODES } from 'node:http'`: see the rule in eslint.config.js.
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/**
 * Requests that never reach Express get D1's answer all the same: the JSON body and a Request-Id,
 * written straight to the socket, which is then closed.
 */
export function answerRequestsExpressNeverSees(server: Server, logger: Logger): void {
  answerUnreadableRequests(server, logger);
  refuseConnect(server, logger);
}

/**
 * A request Node cannot parse as HTTP (a malformed header line, headers over Node's size limit)
 * never reaches Express: Node answers it itself with a bare 400 or 431 and no body. This answers it
 * with 400 `invalid_request`, then closes the connection, since what follows on it cannot be read
 * either. A request that timed out keeps Node's 408.
 */
function answerUnreadableRequests(server: Server, logger: Logger): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    }
    const refusal = new ApiError(
      'invalid_request',
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request headers are too large.'
        : 'The request could not be read as HTTP/1.1.',
    );
    const requestId = answerAndClose(socket, refusal);
    logger.info({ requestId, code: error.code }, 'unreadable request');
  });
}

/**
 * Node hands a CONNECT request to the server's 'connect' listeners rather than to Express, and
 * without one it closes the socket unanswered. The API tunnels nothing: 405 `method_not_allowed`,
 * as for any other method it does not take.
 */
function refuseConnect(server: Server, logger: Logger): void {
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const refusal = new ApiError('method_not_allowed', 'CONNECT is not allowed here; use GET.');
    const requestId = answerAndClose(socket, refusal, { Allow: 'GET, HEAD' });
    logger.info({ requestId, method: req.method }, 'CONNECT refused');
  });
}

/** Writes D1's answer for `error` as a whole HTTP/1.1 response and closes; returns its Request-Id. */
function answerAndClose(socket: Duplex, error: ApiError, headers: Record<string, string> = {}): string {
  const requestId = newRequestId();
  const body = JSON.stringify(errorBody(error, requestId));
  const status = ERROR_CODES[error.code].status;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  return requestId;
}
