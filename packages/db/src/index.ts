export { createDb, migrateToLatest, type DbOptions } from './db.ts';
export { migrations } from './migrations/index.ts';
export type * from './schema.ts';
export * from './repositories/agencies.ts';
export * from './repositories/api-keys.ts';
