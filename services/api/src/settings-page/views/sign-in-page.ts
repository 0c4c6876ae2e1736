import { html } from '../html.ts';
import { CSRF_FIELD } from '../session.ts';
import { banners, page } from './layout.ts';

export function signInPage(input: { csrf: string; email?: string; error?: string }): string {
  return page(
    'Sign in',
    html`<h1>Sign in to API settings</h1>
      ${banners({ error: input.error })}
      <section class="card">
        <form method="post" action="/settings/sign-in">
          <input type="hidden" name="${CSRF_FIELD}" value="${input.csrf}" />
          <label for="email">E-mail</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="username"
            required
            value="${input.email ?? ''}"
          />
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
          <div class="actions"><button type="submit">Sign in</button></div>
        </form>
        <p class="hint">
          Owners of an agency manage its API keys and webhooks here. Ask the platform team for a password
          (<code>tripctl user set-password</code>).
        </p>
      </section>`,
  );
}
