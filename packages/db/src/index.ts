// What nearly every importer needs: the connection, the migrations, the schema's types and the
// readiness probe's ping. Each table's queries (or an aggregate's, such as a webhook's attempts)
// are a subpath of their own, `@trips/db/<file>` for src/repositories/<file>.ts, listed in
// package.json, so an importer loads only the repositories it uses; the precompiled lookups are
// `@trips/db/fast-paths` (src/fast-paths/index.ts says what they rely on).
export { createDb, createPool, migrateToLatest } from './db.ts';
export { isDatabaseUnavailable, spoilsConnection } from './unavailable.ts';
export { migrations } from './migrations/index.ts';
export type * from './schema.ts';
export { pingDatabase } from './repositories/ping.ts';
