import type { SessionUser } from '@trips/db/sessions';
import { html, type SafeHtml } from '../html.ts';
import { page } from './layout.ts';

export function messagePage(title: string, message: string, user?: SessionUser): string {
  return page(
    title,
    html`<h1>${title}</h1>
      <p role="alert">${message}</p>
      <p><a href="/settings">Back to API settings</a></p>`,
    user,
  );
}

/** A key or secret, shown once: it is not stored anywhere it could be shown again. */
export function shownOncePage(
  user: SessionUser,
  input: {
    title: string;
    label: string;
    value: string;
    /** The same value in another form some readers need (a secret for Standard Webhooks libraries). */
    alternate?: { label: string; value: string; hint: SafeHtml };
    explanation: SafeHtml;
    back: string;
  },
): string {
  const alternate = input.alternate;
  return page(
    input.title,
    html`<h1>${input.title}</h1>
      <div class="secret" role="status">
        <p><strong>${input.label}</strong>, shown only this once. Copy it now and keep it somewhere safe:</p>
        <output aria-label="${input.label}">${input.value}</output>
        ${
          alternate
            ? html`<p>${alternate.hint}</p>
                <output aria-label="${alternate.label}">${alternate.value}</output>`
            : ''
        }
        ${input.explanation}
      </div>
      <p><a href="${input.back}">I have copied it, go back</a></p>`,
    user,
  );
}
