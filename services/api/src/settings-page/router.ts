import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { SCOPES } from '@trips/contracts';
import { deleteExpiredSessions, type Database, type SessionUser } from '@trips/db';
import { describeDuration, isCalendarTime, type Logger } from '@trips/runtime';
import { SettingsError, type Settings } from '@trips/settings';
import { takeMalformedEscapesLiterally } from '../http/malformed-escapes.ts';
import { html } from './html.ts';
import {
  clearCookie,
  CSRF_FIELD,
  newToken,
  readCookie,
  sameToken,
  Sessions,
  setCookie,
  SIGN_IN_CSRF_COOKIE,
} from './session.ts';
import { signIn, type SignInPolicy } from './sign-in.ts';
import { STYLES } from './styles.ts';
import {
  messagePage,
  overviewPage,
  shownOncePage,
  signInPage,
  webhookPage,
  type Banner,
  type WebhookDraft,
} from './views.ts';

export interface SettingsPageOptions extends SignInPolicy {
  settings: Settings;
  sessionTtlMs: number;
  /** EVENT_RETENTION, to tell owners how far back a redelivery reaches. */
  eventRetentionMs: number;
}

/** What a finished action tells the owner on the page it redirects to (no free text in URLs). */
const NOTICES: Record<string, string> = {
  'scopes-saved': 'The key’s scopes are saved; they apply to its next request.',
  'key-revoked': 'The key is revoked: requests with it are refused from now on.',
  'webhook-updated': 'Your changes are saved.',
  'webhook-enabled': 'The webhook is on again, with a fresh failure streak.',
  'webhook-disabled': 'The webhook is switched off: nothing is delivered to it until you switch it back on.',
  'test-sent': 'A test event is on its way; it shows in the delivery log in a moment (reload the page).',
  redelivered: 'The events are queued for delivery again; they show in the delivery log as they go.',
};

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

const fields = (value: unknown): string[] =>
  (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter(
    (v): v is string => typeof v === 'string',
  );
const holdsNul = (value: unknown): boolean =>
  typeof value === 'string' ? value.includes('\0') : Array.isArray(value) && value.some(holdsNul);
const field = (value: unknown): string => (typeof value === 'string' ? value : '');
const optionalText = (value: unknown): string | null => (field(value).trim() === '' ? null : field(value));

type SignedIn = Response<unknown, { user: SessionUser }>;

/**
 * The owners' "API settings" page (issue 5) at /settings: sign-in with a session cookie, then
 * keys and webhooks through the settings module, which checks that the user is an owner and
 * audits every change. Every form carries the session's CSRF token. Mounted at /settings, so the
 * API's own requests pass it with one prefix check.
 */
export function settingsPageRouter(
  db: Kysely<Database>,
  logger: Logger,
  options: SettingsPageOptions,
): Router {
  const { settings } = options;
  const sessions = new Sessions(db, options.sessionTtlMs);
  const retention = describeDuration(options.eventRetentionMs);
  const router = Router();

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

  // ---- Signing in and out ----

  const renderSignIn = (req: Request, res: Response, status: number, error?: string, email?: string) => {
    const csrf = newToken();
    setCookie(req, res, SIGN_IN_CSRF_COOKIE, csrf);
    res.status(status).type('html').send(signInPage({ csrf, error, email }));
  };

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

  // ---- Everything else needs a session, and every form its token ----

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

  router.post('/sign-out', async (req, res) => {
    await sessions.end(req, res);
    res.redirect(303, '/settings/sign-in');
  });

  const actor = (res: SignedIn) => ({ userId: res.locals.user.userId });
  const notice = (req: Request): string | undefined => NOTICES[field(req.query.notice)];

  async function renderOverview(
    req: Request,
    res: SignedIn,
    status = 200,
    banner: Banner = {},
    draft?: WebhookDraft,
  ) {
    const user = res.locals.user;
    const [keys, webhooks] = await Promise.all([
      settings.listKeys(actor(res), user.agencyId),
      settings.listWebhooks(actor(res), user.agencyId),
    ]);
    res
      .status(status)
      .type('html')
      .send(overviewPage(user, { keys, webhooks, draft, notice: notice(req), ...banner }));
  }

  async function renderWebhook(
    req: Request,
    res: SignedIn,
    status = 200,
    banner: Banner = {},
    draft?: WebhookDraft,
  ) {
    const id = String(req.params.id);
    const [webhook, { attempts }] = await Promise.all([
      settings.getWebhook(actor(res), id),
      settings.listAttempts(actor(res), id, 50),
    ]);
    res
      .status(status)
      .type('html')
      .send(
        webhookPage(res.locals.user, {
          webhook,
          attempts,
          retention,
          draft,
          notice: notice(req),
          ...banner,
        }),
      );
  }

  /**
   * Runs an action. Bad input (400), or a broker that is not there (503), re-renders the form's
   * page with the module's message; the module has changed nothing.
   */
  type Refusal = (req: Request, res: SignedIn, status: number, banner: Banner) => Promise<void>;
  const act =
    (work: (req: Request, res: SignedIn) => Promise<void>, refuse: Refusal) =>
    async (req: Request, res: Response, next: NextFunction) => {
      try {
        await work(req, res as SignedIn);
      } catch (error) {
        if (!(error instanceof SettingsError) || (error.code !== 'invalid' && error.code !== 'unavailable')) {
          return next(error);
        }
        const unavailable = error.code === 'unavailable';
        // What is missing (a broker's host name, a queue's name) is for the platform team's logs,
        // not for an agency's owner (D1: no internal host name in an answer).
        if (unavailable)
          logger.warn({ err: error, path: req.baseUrl + req.path }, 'settings action unavailable');
        const message = unavailable
          ? 'Deliveries cannot be queued right now: our delivery service is unreachable. Nothing was sent; try again later.'
          : error.message;
        await refuse(req, res as SignedIn, unavailable ? 503 : 400, { error: message }).catch(next);
      }
    };
  const onOverview =
    (draft?: (req: Request) => WebhookDraft): Refusal =>
    (req, res, status, banner) =>
      renderOverview(req, res, status, banner, draft?.(req));
  const onWebhook =
    (draft?: (req: Request) => WebhookDraft): Refusal =>
    (req, res, status, banner) =>
      renderWebhook(req, res, status, banner, draft?.(req));
  const webhookDraft = (req: Request): WebhookDraft => ({
    url: field(req.body.url),
    description: field(req.body.description),
    events: fields(req.body.events),
  });

  router.get('/', (req, res, next) => renderOverview(req, res as SignedIn).catch(next));

  // ---- Keys ----

  router.post(
    '/keys',
    act(async (req, res) => {
      const created = await settings.createKey(actor(res), {
        agencyId: res.locals.user.agencyId,
        scopes: fields(req.body.scopes),
        name: optionalText(req.body.name),
      });
      res.type('html').send(
        shownOncePage(res.locals.user, {
          title: 'Your new API key',
          label: `API key ${created.prefix}…`,
          value: created.key,
          explanation: html`<p>
            Send it as <code>Authorization: Bearer …</code>. Scopes: ${created.scopes.join(', ')}. We keep
            only a hash of it: if it is lost, revoke it and create another.
          </p>`,
          back: '/settings',
        }),
      );
    }, onOverview()),
  );

  router.post(
    '/keys/:id/scopes',
    act(async (req, res) => {
      const wanted = fields(req.body.scopes);
      if (wanted.length === 0) {
        throw new SettingsError('invalid', 'a key keeps at least one scope; to stop a key, revoke it.');
      }
      const id = String(req.params.id);
      const unwanted = SCOPES.filter((s) => !wanted.includes(s));
      await settings.changeKeyScopes(actor(res), id, { add: wanted, remove: unwanted });
      res.redirect(303, '/settings?notice=scopes-saved');
    }, onOverview()),
  );

  router.post(
    '/keys/:id/revoke',
    act(async (req, res) => {
      await settings.revokeKey(actor(res), String(req.params.id));
      res.redirect(303, '/settings?notice=key-revoked');
    }, onOverview()),
  );

  // ---- Webhooks ----

  router.post(
    '/webhooks',
    act(async (req, res) => {
      const draft = webhookDraft(req);
      const { webhook, secret } = await settings.createWebhook(actor(res), {
        agencyId: res.locals.user.agencyId,
        url: draft.url ?? '',
        eventTypes: draft.events ?? [],
        description: optionalText(req.body.description),
      });
      res.type('html').send(
        shownOncePage(res.locals.user, {
          title: 'Your new webhook',
          label: 'Signing secret',
          value: secret,
          explanation: html`<p>
            Verify each delivery’s <code>Service-Signature</code> with it (see the webhooks guide). Deliveries
            to <code>${webhook.url}</code> start with the next event.
          </p>`,
          back: `/settings/webhooks/${webhook.id}`,
        }),
      );
    }, onOverview(webhookDraft)),
  );

  router.get('/webhooks/:id', (req, res, next) => renderWebhook(req, res as SignedIn).catch(next));

  router.post(
    '/webhooks/:id',
    act(async (req, res) => {
      const draft = webhookDraft(req);
      const id = String(req.params.id);
      await settings.updateWebhook(actor(res), id, {
        url: draft.url,
        eventTypes: draft.events,
        description: optionalText(req.body.description),
      });
      res.redirect(303, `/settings/webhooks/${id}?notice=webhook-updated`);
    }, onWebhook(webhookDraft)),
  );

  for (const [path, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    router.post(
      `/webhooks/:id/${path}`,
      act(async (req, res) => {
        const id = String(req.params.id);
        await settings.setWebhookEnabled(actor(res), id, enabled);
        res.redirect(303, `/settings/webhooks/${id}?notice=webhook-${path}d`);
      }, onWebhook()),
    );
  }

  router.post(
    '/webhooks/:id/rotate-secret',
    act(async (req, res) => {
      const seconds = Number(field(req.body.overlap_seconds) || 'NaN');
      const id = String(req.params.id);
      const rotated = await settings.rotateSecret(actor(res), id, { overlapMs: seconds * 1000 });
      res.type('html').send(
        shownOncePage(res.locals.user, {
          title: 'Your new signing secret',
          label: 'Signing secret',
          value: rotated.secret,
          explanation: html`<p>
            The previous secret keeps signing until ${rotated.previous_secrets_expire_at.toISOString()}: until
            then each delivery carries a <code>v1=</code> signature for each, so switch your endpoint to the
            new one before.
          </p>`,
          back: `/settings/webhooks/${id}`,
        }),
      );
    }, onWebhook()),
  );

  router.post(
    '/webhooks/:id/test',
    act(async (req, res) => {
      const id = String(req.params.id);
      await settings.sendTestEvent(actor(res), id);
      res.redirect(303, `/settings/webhooks/${id}?notice=test-sent`);
    }, onWebhook()),
  );

  router.post(
    '/webhooks/:id/redeliver',
    act(async (req, res) => {
      const id = String(req.params.id);
      const since = field(req.body.since);
      // datetime-local has no zone; the form says it is UTC.
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(since) || !isCalendarTime(since)) {
        throw new SettingsError('invalid', 'give the time to redeliver from, as a date and a time (UTC).');
      }
      await settings.redeliver(actor(res), id, { since: new Date(`${since}Z`) });
      res.redirect(303, `/settings/webhooks/${id}?notice=redelivered`);
    }, onWebhook()),
  );

  // ---- Anything else, and refusals ----

  router.use((req, res) => {
    res
      .status(404)
      .type('html')
      .send(messagePage('Not found', 'There is no such page in API settings.', res.locals.user));
  });

  router.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const user = res.locals.user as SessionUser | undefined;
    // Another agency's object answers as a missing one (the module says not_found for both).
    if (error instanceof SettingsError && error.code === 'not_found') {
      return res
        .status(404)
        .type('html')
        .send(messagePage('Not found', 'There is no such key or webhook in your agency.', user));
    }
    if (error instanceof SettingsError && error.code === 'forbidden') {
      return res
        .status(403)
        .type('html')
        .send(
          messagePage(
            'Owners only',
            'Only an owner of the agency manages its API keys and webhooks. Ask an owner of your agency.',
            user,
          ),
        );
    }
    const status = (error as { status?: number }).status ?? 0;
    if (status >= 400 && status < 500) {
      // The body parser's refusals: a form too large or unreadable.
      return res
        .status(status)
        .type('html')
        .send(messagePage('Bad form', 'The form could not be read.', user));
    }
    logger.error(
      { err: error, requestId: res.getHeader('Request-Id'), path: _req.baseUrl + _req.path },
      'settings page error',
    );
    res
      .status(500)
      .type('html')
      .send(
        messagePage(
          'Something went wrong',
          'Something went wrong on our side; nothing may have changed. Please try again later.',
          user,
        ),
      );
  });

  return router;
}
