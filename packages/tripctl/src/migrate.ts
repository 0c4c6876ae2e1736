import type { Command } from 'commander';
import { migrateToLatest } from '@trips/db';
import { JSON_OPTION, type Context } from './context.ts';
import { printResult } from './output.ts';

export function registerMigrate(program: Command, ctx: Context): void {
  program
    .command('migrate')
    .description('apply every pending database migration, in order')
    .option(...JSON_OPTION)
    .action(async (opts: { json?: boolean }) => {
      const applied = await migrateToLatest(ctx.db());
      const human =
        applied.length === 0
          ? ['Already up to date: no migration to apply.']
          : [
              `Applied ${applied.length} migration${applied.length > 1 ? 's' : ''}:`,
              ...applied.map((n) => `  ${n}`),
            ];
      printResult(ctx.io, opts.json, { applied }, human);
    });
}
