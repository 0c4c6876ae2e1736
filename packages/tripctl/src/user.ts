import { Option, type Command } from 'commander';
import type { UserRole } from '@trips/db';
import { createUser } from '@trips/db/users';
import { PLATFORM } from '@trips/settings';
import { requireAgency } from './agency.ts';
import { idOf, parseEmail, parseUserRef, ROLES } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { failure, usageError } from './errors.ts';
import { readPassword } from './password-input.ts';
import { printResult } from './output.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';

export function registerUser(program: Command, ctx: Context): void {
  const user = program.command('user').description('add people to agencies');

  user
    .command('create')
    .description('add a user to an agency; only owners manage keys and webhooks')
    .requiredOption('--agency <id>', 'the agency id (agy_…)', idOf('agy', 'an agency'))
    .requiredOption('--email <email>', 'their e-mail address, unique across agencies', parseEmail)
    .addOption(new Option('--role <role>', 'what they may do').choices(ROLES).makeOptionMandatory())
    .option(...JSON_OPTION)
    .action(async (opts: { agency: string; email: string; role: UserRole; json?: boolean }) => {
      const agency = await requireAgency(ctx, opts.agency);
      const created = await createUser(ctx.db(), {
        agencyId: agency.id,
        email: opts.email,
        role: opts.role,
      }).catch((error: unknown) => {
        // users_email: one account per address, whatever its case, across all agencies.
        if ((error as { code?: string }).code === '23505') {
          throw failure(`a user with e-mail ${opts.email} already exists.`);
        }
        throw error;
      });
      printResult(ctx.io, opts.json, created, [
        `Created ${created.role} ${created.id} <${created.email}> in agency ${agency.id} "${agency.name}".`,
      ]);
    });

  user
    .command('set-password')
    .description(
      "set a user's password for the settings page, read from stdin or a prompt (never an argument)",
    )
    .addArgument(objectIdArgument('the user, by id (usr_…) or e-mail address', parseUserRef))
    .addOption(objectIdOption(parseUserRef))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; json?: boolean }) => {
      const settings = ctx.settings();
      const found = await settings.findUser(opts.id);
      const password = await readPassword(ctx.io, `New password for ${found.email}: `);
      if (password === '') throw usageError('no password given on stdin.');
      const updated = await settings.setPassword(PLATFORM, found.id, password);
      printResult(ctx.io, opts.json, { ...updated, password_set: true }, [
        `Set the password of ${updated.role} ${updated.id} <${updated.email}>.`,
      ]);
    });
}
