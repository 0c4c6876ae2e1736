export { adminUrl, createTestDatabase, ensureTemplate, type TestDatabase } from './database.ts';
export { waitFor } from './wait.ts';
export * from './amqp.ts';
