import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { countSignInAttempt, forgetSignInFailures, forgiveSignInAttempt } from '@trips/db/sign-in-failures';
import { findUserForSignIn } from '@trips/db/users';
import { hashPassword, verifyPassword } from '@trips/settings';

/** How many failed sign-ins are allowed in each window, per e-mail and per client address. */
export interface SignInPolicy {
  signInFailuresPerEmail: number;
  signInFailuresPerAddress: number;
  signInWindowMs: number;
}

export type SignInResult =
  | { outcome: 'signed_in'; userId: string }
  | { outcome: 'wrong_credentials' }
  | { outcome: 'throttled'; retryAfterSeconds: number };

// Checked when the e-mail is unknown, so an unknown address takes as long as a wrong password
// and the answer's timing does not tell which e-mails have accounts.
let decoyHash: Promise<string> | undefined;
const decoy = () => (decoyHash ??= hashPassword('decoy password, never matches'));

/**
 * Checks an e-mail and password. The attempt is counted before the password is checked, so a
 * burst of parallel guesses is limited like a sequence; once over the limit the password is
 * not even checked, and the answer says only when to try again.
 */
export async function signIn(
  db: Kysely<Database>,
  policy: SignInPolicy,
  attempt: { email: string; password: string; address: string },
): Promise<SignInResult> {
  const emailKey = `email:${attempt.email.trim().toLowerCase().slice(0, 320)}`;
  // An address is at most 45 characters; a trusted proxy may still forward anything it was given.
  const addressKey = `address:${attempt.address.slice(0, 100)}`;
  const counts = await countSignInAttempt(db, [emailKey, addressKey], policy.signInWindowMs);
  const limits: [string, number][] = [
    [emailKey, policy.signInFailuresPerEmail],
    [addressKey, policy.signInFailuresPerAddress],
  ];
  for (const [key, limit] of limits) {
    const count = counts.get(key)!;
    if (count.failures > limit) {
      const reopensAt = count.windowStartedAt.getTime() + policy.signInWindowMs;
      return {
        outcome: 'throttled',
        retryAfterSeconds: Math.max(1, Math.ceil((reopensAt - Date.now()) / 1000)),
      };
    }
  }

  const user = await findUserForSignIn(db, attempt.email.trim());
  const matches = user?.password_hash
    ? await verifyPassword(attempt.password, user.password_hash)
    : (await verifyPassword(attempt.password, await decoy()), false);
  if (!user || !matches) return { outcome: 'wrong_credentials' };

  await forgetSignInFailures(db, emailKey);
  await forgiveSignInAttempt(db, [addressKey]);
  return { outcome: 'signed_in', userId: user.id };
}
