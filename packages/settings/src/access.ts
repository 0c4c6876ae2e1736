import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { findAgency } from '@trips/db/agencies';
import { findUserById } from '@trips/db/users';
import { notFound, SettingsError } from './errors.ts';

/**
 * Who acts: an owner of the agency (the settings page), or the platform team through tripctl,
 * audited as `platform`. A planner, or an owner of another agency, is refused with `forbidden`.
 */
export type Actor = { userId: string } | { platform: true };
export const PLATFORM: Actor = Object.freeze({ platform: true });

/** Who an audit entry names: the user who acted, or `platform` with no user. */
export interface Who {
  actorUserId: string | null;
  actor: string;
}

/** Refuses anyone but an owner of the agency (or the platform team). */
export async function authorize(trx: Kysely<Database>, actor: Actor, agencyId: string): Promise<Who> {
  if ('platform' in actor && actor.platform === true) return { actorUserId: null, actor: 'platform' };
  const userId = (actor as { userId: string }).userId;
  const user = await findUserById(trx, userId);
  // Another agency's object is indistinguishable from a missing one (D1), whatever the role: a
  // planner told 'owners only' there would learn that the id exists.
  if (!user || user.agency_id !== agencyId) throw notFound('no such object in your agency.');
  if (user.role !== 'owner') {
    throw new SettingsError('forbidden', 'only an owner of the agency manages its API keys and webhooks.');
  }
  return { actorUserId: user.id, actor: user.email };
}

export async function requireAgency(trx: Kysely<Database>, agencyId: string) {
  const agency = await findAgency(trx, agencyId);
  if (!agency) throw notFound(`no agency ${agencyId}.`);
  return agency;
}
