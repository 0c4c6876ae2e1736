import { deleteSessionsOf } from '@trips/db/sessions';
import { findUserByEmail, findUserById, lockUser, setUserPassword } from '@trips/db/users';
import { authorize, type Actor } from './access.ts';
import { audit } from './audit.ts';
import type { SettingsContext } from './context.ts';
import { notFound } from './errors.ts';
import { hashPassword } from './passwords.ts';

/** People: a user's password, and finding a user for tripctl. */
export function peopleActions({ db, inTransaction }: SettingsContext) {
  return {
    /**
     * Sets a user's password (scrypt, self-describing). The user themself, an owner of their agency
     * or the platform team may; the password is never audited or returned.
     */
    async setPassword(actor: Actor, userId: string, password: string) {
      const passwordHash = await hashPassword(password);
      return inTransaction(async (trx) => {
        const user = await lockUser(trx, userId);
        if (!user) throw notFound(`no user ${userId}.`);
        const self = 'userId' in actor && actor.userId === userId;
        const who = self
          ? { actorUserId: user.id, actor: user.email }
          : await authorize(trx, actor, user.agency_id);
        await setUserPassword(trx, userId, passwordHash);
        // A new password signs the user out of every settings-page session.
        await deleteSessionsOf(trx, userId);
        await audit(trx, who, user.agency_id, 'user.password_set', 'user', userId);
        return { id: user.id, agency_id: user.agency_id, email: user.email, role: user.role };
      });
    },

    /** A user by id (usr_…) or e-mail (any case), for tripctl's arguments. */
    async findUser(idOrEmail: string) {
      const user = idOrEmail.startsWith('usr_')
        ? await findUserById(db, idOrEmail)
        : await findUserByEmail(db, idOrEmail);
      if (!user) throw notFound(`no user ${idOrEmail}.`);
      return user;
    },
  };
}
