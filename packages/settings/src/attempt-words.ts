import { ASKS_TO_WAIT, parseRetryAfter } from '@trips/broker';
import { formatTime } from '@trips/contracts';
import type { WebhookAttemptRow } from '@trips/db';

// Why an attempt failed, in words a receiver's developer can act on (issue 26). The settings page
// and tripctl both say it this way. The dispatcher records a failure class (`error`) and, for a
// failure without an answer, Node's error code (`error_detail`); the words are told from those, and
// for an answer that asks us to wait (D10), from the Retry-After among its kept headers.

/** TLS error codes of Node and OpenSSL, and what each means for the endpoint's certificate. */
const TLS_REASONS: [RegExp, string][] = [
  [/SELF_SIGNED/, 'the certificate is not trusted (self-signed)'],
  [/CERT_HAS_EXPIRED/, 'the certificate has expired'],
  [/CERT_NOT_YET_VALID/, 'the certificate is not valid yet'],
  [/ALTNAME|HOSTNAME_MISMATCH/, 'the certificate is not for this host name'],
  [
    /UNABLE_TO_(GET_ISSUER|VERIFY_LEAF)/,
    'the certificate chain is incomplete or not trusted (send the intermediate certificates)',
  ],
  [/CERT_REVOKED/, 'the certificate is revoked'],
  [/EPROTO|SSL|OSSL|HANDSHAKE/, 'the handshake failed (no TLS 1.2 or newer, or no common cipher)'],
];

const STATUS_WORDS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

type Described = Pick<
  WebhookAttemptRow,
  'succeeded' | 'status_code' | 'error' | 'error_detail' | 'duration_ms' | 'response_headers'
>;

/**
 * What a 429 or 503 answer's Retry-After asked, from its headers as kept (`name: value` lines):
 * seconds as given, an HTTP date as a time (docs/wording.md). Nothing when the headers were not
 * kept (attempts made before they were).
 */
function retryAfterWords(headers: string | null): string {
  if (headers === null) return '';
  const value = /^retry-after:[ \t]*(.*?)\r?$/im.exec(headers)?.[1];
  if (value === undefined) return ', no Retry-After';
  const asked = parseRetryAfter(value);
  if (!asked) return `, a Retry-After that is neither seconds nor an HTTP date ('${value.slice(0, 60)}')`;
  return 'seconds' in asked ? `, Retry-After ${asked.seconds} s` : `, Retry-After ${formatTime(asked.at)}`;
}

/** What happened to an attempt, in one line: "delivered (200)" or why it failed. */
export function describeAttempt(a: Described): string {
  const status = a.status_code;
  if (a.succeeded) return `delivered: answered ${status}`;
  const detail = a.error_detail ?? '';
  const code = detail ? ` (${detail})` : '';
  switch (a.error) {
    case 'http_status': {
      if (status !== null && ASKS_TO_WAIT.has(status)) {
        return `asked to wait: ${status}${retryAfterWords(a.response_headers)}`;
      }
      const words = status !== null && STATUS_WORDS[status] ? ` ${STATUS_WORDS[status]}` : '';
      return `answered ${status}${words}: only a 2xx answer counts as delivered`;
    }
    case 'redirect':
      return `answered ${status}: redirects are not followed; register the URL it points to`;
    case 'timeout':
      return `no complete answer within ${Math.max(1, Math.round(a.duration_ms / 1000))} s: answer 2xx first, then do the work`;
    case 'connection_refused':
      return 'connection refused: nothing accepts connections at that host and port';
    case 'connection_reset':
      return `the connection was closed before a complete answer${code}`;
    case 'dns':
      return /EAI_AGAIN/.test(detail)
        ? 'DNS: the host name could not be looked up just now (EAI_AGAIN)'
        : `DNS: the host name does not exist${code}`;
    case 'tls': {
      const reason = TLS_REASONS.find(([pattern]) => pattern.test(detail))?.[1] ?? 'the handshake failed';
      return `TLS: ${reason}${code}`;
    }
    case 'ssrf_blocked':
      return 'refused: the host name resolves to a private, loopback or link-local address';
    case 'invalid_url':
      return 'not sent: the URL is not a valid https URL';
    case 'invalid_answer':
      return detail === 'HPE_HEADER_OVERFLOW'
        ? 'answer headers over 16 KiB, so its status could not be read: send fewer or shorter headers'
        : `the answer is not valid HTTP${code}`;
    default:
      return `network error${code}`;
  }
}
