import express, { type Router } from 'express';
import { takeMalformedEscapesLiterally } from '../../http/malformed-escapes.ts';
import { holdsNul } from '../form-fields.ts';
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
  // Postgres refuses a NUL in text (22021), which would surface as a 500: a form or path holding
  // one is refused first, as the form's fault. An id whose escapes do not decode is read literally,
  // so it is one that exists nowhere (404) rather than a form Express could not read.
  router.use(takeMalformedEscapesLiterally, (req, res, next) => {
    if (!/%00/i.test(req.path) && !Object.values(req.body ?? {}).some(holdsNul)) return next();
    res
      .status(400)
      .type('html')
      .send(messagePage('Bad form', 'No field may hold a NUL character.', undefined));
  });
}
