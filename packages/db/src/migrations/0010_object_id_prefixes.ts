import { sql, type Kysely } from 'kysely';

// D4: the ids the API shows carry their type prefix (`trp_`, `pay_`, `con_`), and the contracts'
// schemas hold every answer to that pattern. The database makes them so when a writer leaves `id`
// out (gen_id); these checks make a writer that sets its own id keep to the same pattern, instead
// of writing a row whose every API answer would break the contract. Frozen.
const TABLES = [
  ['trips', 'trp'],
  ['payments', 'pay'],
  ['contacts', 'con'],
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  for (const [table, prefix] of TABLES) {
    await sql`
      ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${sql.id(`${table}_id_has_prefix`)}
        CHECK (id ~ ${sql.lit(`^${prefix}_[0-9A-Za-z_-]+$`)})
    `.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [table] of TABLES) {
    await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT ${sql.id(`${table}_id_has_prefix`)}`.execute(
      db,
    );
  }
}
