import {
  CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type QueryResult,
} from 'kysely';
import { findContact, type ContactRecord } from '../repositories/contacts.ts';
import { findPayment, type PaymentRecord } from '../repositories/payments.ts';
import { findTrip, type TripRecord } from '../repositories/trips.ts';
import type { Database } from '../schema.ts';

// The read API's hot lookups (GET /trips/{id}, /payments/{id}, /contacts/{id}) with their SQL
// compiled once, instead of built and compiled by kysely on every request, which was a large share
// of the API's CPU per request. The SQL is the one findTrip,
// findPayment and findContact build: each runs once against a database that records its query
// instead of running it, with stand-ins for the parameters. So the two cannot drift apart.
//
// Each is also marked to be prepared (lean-client-query.ts): Postgres then parses and plans the
// lookup once per connection rather than on every request, which was most of what the lookup
// cost the database.

/** Stand-ins that mark where each parameter goes; only their identity matters. */
const AGENCY_ID = Object.freeze({ stands_for: 'agencyId' }) as unknown as string;
const ID = Object.freeze({ stands_for: 'id' }) as unknown as string;

type Finder<Row> = (db: Kysely<Database>, agencyId: string, id: string) => Promise<Row | undefined>;

interface Template {
  sql: string;
  parameters: readonly unknown[];
  agencyIdAt: number[];
  idAt: number[];
}

/** A Postgres kysely whose every query is handed to `record` and answers no rows. */
function recordingDb(record: (query: CompiledQuery) => void): Kysely<Database> {
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      record(query);
      return { rows: [] };
    },
    streamQuery() {
      throw new Error('not supported');
    },
  };
  class RecordingDriver extends DummyDriver {
    override async acquireConnection() {
      return connection;
    }
  }
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new RecordingDriver(),
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
}

async function capture<Row>(find: Finder<Row>): Promise<Template> {
  const queries: CompiledQuery[] = [];
  await find(
    recordingDb((query) => queries.push(query)),
    AGENCY_ID,
    ID,
  );
  if (queries.length !== 1) throw new Error(`expected one query, the finder ran ${queries.length}`);
  const { sql, parameters } = queries[0]!;
  const at = (standIn: unknown) => parameters.flatMap((value, index) => (value === standIn ? [index] : []));
  const template = { sql, parameters, agencyIdAt: at(AGENCY_ID), idAt: at(ID) };
  if (template.agencyIdAt.length === 0 || template.idAt.length === 0) {
    throw new Error('the query must take both the agency id and the id as parameters');
  }
  return template;
}

/** `find` with its SQL compiled once and prepared under `name` (see lean-client-query.ts). */
function precompiled<Row>(name: string, find: Finder<Row>): Finder<Row> {
  let template: Template | undefined;
  let capturing: Promise<Template> | undefined;
  const prepare = async () => {
    const captured = await capture(find);
    return { ...captured, sql: `/* prepared: ${name} */ ${captured.sql}` };
  };
  return async (db, agencyId, id) => {
    template ??= await (capturing ??= prepare());
    const parameters = template.parameters.slice();
    for (const index of template.agencyIdAt) parameters[index] = agencyId;
    for (const index of template.idAt) parameters[index] = id;
    const { rows } = await db.executeQuery<Row>(CompiledQuery.raw(template.sql, parameters));
    return rows[0];
  };
}

/** findTrip with its SQL compiled once, prepared per connection. */
export const findTripPrecompiled = precompiled<TripRecord>('find_trip', findTrip);
/** findPayment with its SQL compiled once, prepared per connection. */
export const findPaymentPrecompiled = precompiled<PaymentRecord>('find_payment', findPayment);
/** findContact with its SQL compiled once, prepared per connection. */
export const findContactPrecompiled = precompiled<ContactRecord>('find_contact', findContact);
