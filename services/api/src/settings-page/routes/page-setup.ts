import express, { type Request, type Router } from 'express';
import { firstWithControlCharacter, holdsControlCharacter } from '../../http/control-characters.ts';
import { takeMalformedEscapesLiterally } from '../../http/malformed-escapes.ts';
import { STYLES } from '../styles.ts';
import { messagePage } from '../views/message-pages.ts';

const SECURITY_HEADERS = {
  // No script at all; styles only from our own stylesheet; forms only post back to us.
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  // Pages show keys and secrets once: never kept by a browser or proxy cache.
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
};

/** Ahead of every route: the security headers, the stylesheet, and the form read (or refused). */
export function addPageSetup(router: Router): void {
  router.use((_req, res, next) => {
    res.set(SECURITY_HEADERS);
    next();
  });
  router.get('/style.css', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=3600').type('text/css').send(STYLES);
  });
  router.use(express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 100 }));
  // An id whose escapes do not decode is read literally, so it is one that exists nowhere (404)
  // rather than a form Express could not read. Then no value the page reads may hold a control
  // character (http/control-characters.ts says why): one that does is the request's fault, a 400
  // that names it, before any route reads it.
  router.use(takeMalformedEscapesLiterally, (req, res, next) => {
    const culprit = withControlCharacter(req);
    if (culprit === undefined) return next();
    res
      .status(400)
      .type('html')
      .send(
        messagePage(
          'Bad request',
          `${culprit} holds a control character (such as NUL, a line break or a tab), which none may hold. Nothing was changed.`,
          undefined,
        ),
      );
  });
}

/** Our cookies: the session's, the sign-in form's token and the key of a value shown once. */
const OUR_COOKIE = /^trips_/;

/** What of the request holds a control character, in words for the page; undefined when nothing. */
function withControlCharacter(req: Request): string | undefined {
  const segments = req.path.split('/').map((segment) => decodeURIComponent(segment));
  if (segments.some(holdsControlCharacter)) return 'The address';
  const field = firstWithControlCharacter(req.body ?? {});
  if (field !== undefined) return `The field '${field}'`;
  const parameter = firstWithControlCharacter(req.query);
  if (parameter !== undefined) return `The parameter '${parameter}'`;
  for (const pair of req.headers.cookie?.split(';') ?? []) {
    const [name = '', value = ''] = pair.trim().split(/=(.*)/s);
    if (OUR_COOKIE.test(name) && holdsControlCharacter(value)) return `The cookie '${name}'`;
  }
  // The client's address is read from X-Forwarded-For when a proxy is trusted (API_TRUST_PROXY).
  if (holdsControlCharacter(req.ip)) return 'The client address (X-Forwarded-For)';
  return undefined;
}
