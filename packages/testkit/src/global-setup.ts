import { ensureTemplate } from './database.ts';

// Build the migrated template once before the workers start, so they only clone it.
export default async function globalSetup(): Promise<void> {
  await ensureTemplate();
}
