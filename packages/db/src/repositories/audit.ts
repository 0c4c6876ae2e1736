import type { Kysely, Transaction } from 'kysely';
import type { AuditLogRow, AuditObjectType, Database } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

interface NewAuditEntry {
  agencyId: string;
  /** The owner who acted, or null for the platform team (tripctl). */
  actorUserId: string | null;
  /** What a reader of the trail sees: the owner's e-mail, or 'platform'. */
  actor: string;
  action: string;
  objectType: AuditObjectType;
  objectId: string;
  /** A small summary of the change; never a secret, a key or a password. */
  details?: Record<string, unknown>;
}

/** Writes one audit row; call it in the transaction of the change it records. */
export async function insertAuditEntry(db: Db, entry: NewAuditEntry): Promise<AuditLogRow> {
  return db
    .insertInto('audit_log')
    .values({
      agency_id: entry.agencyId,
      actor_user_id: entry.actorUserId,
      actor: entry.actor,
      action: entry.action,
      object_type: entry.objectType,
      object_id: entry.objectId,
      details: JSON.stringify(entry.details ?? {}),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}
