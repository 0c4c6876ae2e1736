export { createDb, migrateToLatest, type DbOptions } from './db.ts';
export { migrations } from './migrations/index.ts';
export type * from './schema.ts';
export * from './repositories/agencies.ts';
export * from './repositories/api-keys.ts';
export * from './repositories/sync.ts';
export * from './repositories/trips.ts';
export * from './repositories/payments.ts';
export * from './repositories/contacts.ts';
