import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_CODES } from '@trips/contracts';
import type { Logger } from '@trips/runtime';
import { ApiError, errorBody } from '../errors.ts';
import { newRequestId } from './request-id.ts';
import { JSON_CONTENT_TYPE } from './send-json.ts';

// Not `import { STATUS_CODES } from 'node:http'`: see the rule in eslint.config.js.
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/**
 * A request Node cannot parse as HTTP (a malformed header line, headers over Node's size limit)
 * never reaches Express: Node answers it itself with a bare 400 or 431 and no body. This answers
 * it as every other error, with D1's JSON body and a Request-Id: 400 `invalid_request`, then closes
 * the connection, since what follows on it cannot be read either. A request that timed out keeps
 * Node's 408.
 */
export function answerUnreadableRequests(server: Server, logger: Logger): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    }
    const requestId = newRequestId();
    const refusal = new ApiError(
      'invalid_request',
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request headers are too large.'
        : 'The request could not be read as HTTP/1.1.',
    );
    const body = JSON.stringify(errorBody(refusal, requestId));
    const status = ERROR_CODES[refusal.code].status;
    logger.info({ requestId, code: error.code }, 'unreadable request');
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}
