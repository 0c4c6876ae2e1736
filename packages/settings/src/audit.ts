import type { Kysely } from 'kysely';
import type { AuditObjectType, Database } from '@trips/db';
import { insertAuditEntry } from '@trips/db/audit';
import type { Who } from './access.ts';

/** One audit entry for what `who` did in the agency, in the same transaction as the change. */
export async function audit(
  on: Kysely<Database>,
  who: Who,
  agencyId: string,
  action: string,
  objectType: AuditObjectType,
  objectId: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await insertAuditEntry(on, { ...who, agencyId, action, objectType, objectId, details });
}
