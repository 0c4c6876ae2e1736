import { ICON_PATH, PRODUCT_NAME } from '@trips/contracts';
import type { SessionUser } from '@trips/db/sessions';
import type { WebhookState } from '@trips/db/webhooks';
import { html, type SafeHtml } from '../html.ts';
import { CSRF_FIELD } from '../session.ts';

// The settings page's HTML, server-rendered without script. Every value goes through `html`,
// which escapes it. Forms post back to the page and are answered with a redirect (or, for a key
// or secret shown once, with a page that is never cached).
// This module holds what every page shares (the layout, the CSRF field, the banners) and the parts
// more than one page draws; each page has a module of its own beside it.

export interface Banner {
  notice?: string | undefined;
  error?: string | undefined;
}

export function page(title: string, body: SafeHtml, user?: SessionUser): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · API settings · ${PRODUCT_NAME}</title>
        <link rel="stylesheet" href="/settings/style.css" />
        <link rel="icon" href="${ICON_PATH}" type="image/svg+xml" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <div class="inner">
            <p title="${user ? `API settings for ${user.agencyName}` : 'API settings'}">
              <strong>${PRODUCT_NAME}</strong> · API
              settings${user ? html` for <strong>${user.agencyName}</strong>` : ''}
            </p>
            ${
              user
                ? html`<form method="post" action="/settings/sign-out" class="inline">
                    ${csrfField(user)}<span title="${user.email}">${user.email}</span>
                    <button type="submit" class="link">Sign out</button>
                  </form>`
                : ''
            }
          </div>
        </header>
        <main id="main" class="inner" tabindex="-1">${body}</main>
      </body>
    </html>`.value;
}

export const csrfField = (user: SessionUser) =>
  html`<input type="hidden" name="${CSRF_FIELD}" value="${user.csrfToken}" />`;

export function banners({ notice, error }: Banner): SafeHtml {
  return html`${notice ? html`<div class="notice" role="status">${notice}</div>` : ''}${
    error ? html`<div class="error" role="alert"><strong>That did not work:</strong> ${error}</div>` : ''
  }`;
}

const STATE_NAMES: Record<WebhookState | 'revoked', string> = {
  active: 'Active',
  failing: 'Failing',
  switched_off: 'Switched off',
  disabled: 'Off',
  revoked: 'Revoked',
};
export const stateBadge = (state: WebhookState | 'revoked') =>
  html`<span class="state state-${state}">${STATE_NAMES[state]}</span>`;

export function checkboxes(
  name: string,
  legend: string,
  options: readonly string[],
  checked: readonly string[],
) {
  return html`<fieldset>
    <legend>${legend}</legend>
    ${options.map(
      (option) =>
        html`<label
          ><input
            type="checkbox"
            name="${name}"
            value="${option}"
            ${checked.includes(option) ? html` checked` : ''}
          />
          <code>${option}</code></label
        >`,
    )}
  </fieldset>`;
}
