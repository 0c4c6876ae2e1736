import type { RequestHandler } from 'express';
import { invalidParam } from '../errors.ts';

// Control characters: C0 (NUL to US), DEL and C1. No id, cursor, parameter or form field of ours
// holds one, and Postgres refuses a NUL in text with an error, which would surface as a 500: so a
// value a client sends is refused as the client's mistake before anything reads it.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;

/** Whether a value as Express leaves it (a string, or an array of them) holds a control character. */
export const holdsControlCharacter = (value: unknown): boolean =>
  typeof value === 'string'
    ? CONTROL_CHARACTER.test(value)
    : Array.isArray(value) && value.some(holdsControlCharacter);

/** Text as a message may quote it: each control character written as a JSON escape, never raw. */
const printable = (text: string): string =>
  text.replace(CONTROL_CHARACTERS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * The first input of the request that holds a control character, by the name a client knows it
 * by: a path parameter (`id`) or a query parameter, whose name may itself be the culprit.
 */
export function firstWithControlCharacter(inputs: Record<string, unknown>): string | undefined {
  for (const [name, value] of Object.entries(inputs)) {
    if (holdsControlCharacter(name) || holdsControlCharacter(value)) return printable(name);
  }
  return undefined;
}

/**
 * The API's one check for control characters, run by every route after its scope and rate checks
 * (D1 ranks 400 after them): a path or query parameter holding one is a 400 naming it. What a
 * cursor decodes to is checked where it is decoded (params.ts).
 */
export const refuseControlCharacters: RequestHandler = (req, _res, next) => {
  // Node's parser refuses a raw control character (or any byte past ASCII) in the request line, so
  // only an escape can make one: a URL without '%' costs one search, not a parse of its query.
  if (!req.url.includes('%')) return next();
  const name = firstWithControlCharacter(req.params) ?? firstWithControlCharacter(req.query);
  if (name === undefined) return next();
  next(
    invalidParam(
      name,
      `'${name}' holds a control character (such as NUL, a line break or a tab), which no value here may hold.`,
    ),
  );
};
