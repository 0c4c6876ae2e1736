/**
 * The two places where this package goes around kysely's and pg's ordinary path for speed. Each
 * leans on how kysely 0.29 and pg 8 work inside, not only on what they promise, so an upgrade of
 * either can break it without a type error. test/fast-paths.test.ts holds them to their contract
 * on a real Postgres, and fails if an upgrade changes what they rely on; run it after any bump of
 * kysely or pg. Each exists because on a hot path (the dispatcher's statements for every batch of
 * deliveries, the API's lookup for every GET by id) the ordinary path cost more CPU, in Node and in
 * Postgres, than the work the statement asked for.
 *
 * **The lean client query** (lean-client-query.ts, `sendQueriesLean`). createPool replaces
 * `query` on every pg client it opens: a text starting with a `/* prepared: name *\/` mark is sent
 * as a named statement, which Postgres parses and plans once per connection instead of on every
 * call; and every text query goes through pg's callback form in a plain promise, which leaves no
 * result objects behind to be promoted to the old generation, as pg's own promise did. It relies on:
 * - kysely's PostgresConnection calling `client.query(sql, parameters)`, a text and an array
 *   without a callback, on the client the pool handed out. Anything else passes through to pg
 *   untouched: if kysely sent a config object instead, nothing would fail, the fast path would
 *   just be gone;
 * - kysely reading only `command`, `rowCount` and `rows` of the result, which the callback form
 *   gives the same as the promise;
 * - pg accepting `{ name, text, values }` and remembering, per connection, the names it has
 *   parsed, so it parses a name once and only binds and executes it after; a new connection
 *   (after a Postgres restart) starts with none and parses again;
 * - pg's `query(text, values, callback)` calling back once with (error, result) and building no
 *   promise of its own;
 * - pg's pool emitting `connect` once per new client, before the client's first query, and
 *   handing out that same client object afterwards.
 *
 * **The precompiled lookups** (precompiled-lookups.ts, `findTripPrecompiled` and its siblings).
 * The read API's lookups by id run the SQL their kysely finder (findTrip, findPayment,
 * findContact) builds, captured once by running the finder against a stand-in driver and
 * replayed with each request's parameters, so kysely neither builds nor compiles it per request.
 * It relies on:
 * - kysely's DummyDriver, PostgresAdapter, PostgresIntrospector and PostgresQueryCompiler, and a
 *   dialect whose driver may hand out a connection of our own that records each CompiledQuery;
 * - the compiler putting each value given to the builder into `parameters` as the same object,
 *   never copied or written into the SQL text, so stand-in objects show where each parameter
 *   goes, and the SQL text not depending on the values;
 * - each finder running exactly one query, and doing no more with its rows than take the first;
 * - `db.executeQuery(CompiledQuery.raw(sql, parameters))` answering the rows the builder's own
 *   execution answers.
 * The replayed SQL carries the prepared mark, so the lookups also take the lean client query's
 * first path.
 */
export { preparedName, sendQueriesLean } from './lean-client-query.ts';
export {
  findContactPrecompiled,
  findPaymentPrecompiled,
  findTripPrecompiled,
} from './precompiled-lookups.ts';
