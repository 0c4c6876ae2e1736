import type { RequestHandler } from 'express';

const decodes = (segment: string) => {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
};

/**
 * Express decodes a route's `:id` while matching the route, and a malformed percent escape
 * (`/trips/%E0%A4%A`) fails there, before any of the route's own checks run: a key without the
 * scope, or one over its rate, would get 400 where D1 ranks 403 and 429 first. So before routing,
 * a path segment that does not decode is taken literally ('%' read as '%25'): such an id is just
 * one that matches nothing, and answers 404 after every check D1 ranks before it.
 */
export const takeMalformedEscapesLiterally: RequestHandler = (req, _res, next) => {
  // Almost every request has no escape at all: it costs one search of the URL, not a parse of it.
  if (!req.url.includes('%')) return next();
  const path = req.path;
  if (path.includes('%')) {
    const literal = path
      .split('/')
      .map((segment) => (decodes(segment) ? segment : segment.replaceAll('%', '%25')))
      .join('/');
    if (literal !== path) req.url = literal + req.url.slice(path.length);
  }
  next();
};
