import type { Request, Response, Router } from 'express';
import { deleteExpiredSessions } from '@trips/db/sessions';
import type { PageContext } from '../context.ts';
import { field } from '../form-fields.ts';
import {
  clearCookie,
  CSRF_FIELD,
  newToken,
  readCookie,
  sameToken,
  setCookie,
  SIGN_IN_CSRF_COOKIE,
} from '../session.ts';
import { signIn } from '../sign-in.ts';
import { messagePage } from '../views/message-pages.ts';
import { signInPage } from '../views/sign-in-page.ts';

const renderSignIn = (req: Request, res: Response, status: number, error?: string, email?: string) => {
  const csrf = newToken();
  setCookie(req, res, SIGN_IN_CSRF_COOKIE, csrf);
  res.status(status).type('html').send(signInPage({ csrf, error, email }));
};

/** The sign-in form and its post: the only pages served without a session. */
export function addSignInRoutes(router: Router, { db, options, sessions }: PageContext): void {
  router.get('/sign-in', async (req, res) => {
    if (await sessions.current(req)) return res.redirect(303, '/settings');
    renderSignIn(req, res, 200);
  });

  router.post('/sign-in', async (req, res) => {
    const email = field(req.body?.email).slice(0, 320);
    const password = field(req.body?.password).slice(0, 1024);
    // Before a session exists, the form's token is checked against its own cookie (double
    // submit), so another site cannot sign a browser in to an account of its choosing.
    if (!sameToken(req.body?.[CSRF_FIELD], readCookie(req, SIGN_IN_CSRF_COOKIE))) {
      return renderSignIn(req, res, 403, 'the form had expired. Please sign in again.', email);
    }
    const result = await signIn(db, options, { email, password, address: req.ip ?? 'unknown' });
    if (result.outcome === 'throttled') {
      res.set('Retry-After', String(result.retryAfterSeconds));
      const minutes = Math.ceil(result.retryAfterSeconds / 60);
      return renderSignIn(
        req,
        res,
        429,
        `too many failed sign-ins. Try again in ${minutes} minute${minutes > 1 ? 's' : ''}.`,
        email,
      );
    }
    if (result.outcome === 'wrong_credentials') {
      return renderSignIn(req, res, 401, 'wrong e-mail or password.', email);
    }
    await deleteExpiredSessions(db);
    await sessions.start(req, res, result.userId);
    clearCookie(req, res, SIGN_IN_CSRF_COOKIE);
    res.redirect(303, '/settings');
  });
}

/** Every route added after it needs a session, and every form its token. */
export function addSessionCheck(router: Router, { sessions }: PageContext): void {
  router.use(async (req, res, next) => {
    const user = await sessions.current(req);
    if (!user) return res.redirect(303, '/settings/sign-in');
    res.locals.user = user;
    if (req.method === 'POST' && !sameToken(req.body?.[CSRF_FIELD], user.csrfToken)) {
      return res
        .status(403)
        .type('html')
        .send(
          messagePage(
            'Form expired',
            'That form was not sent from this page, or it has expired; nothing was changed. Go back, reload and try again.',
            user,
          ),
        );
    }
    next();
  });
}

export function addSignOutRoute(router: Router, { sessions }: PageContext): void {
  router.post('/sign-out', async (req, res) => {
    await sessions.end(req, res);
    res.redirect(303, '/settings/sign-in');
  });
}
