import { Argument, Option, type Command } from 'commander';

// Every command that acts on one object (agency update, key revoke, webhook disable, user
// set-password …) takes that object's id the same way: as its first argument, like kubectl and
// the Stripe CLI (`tripctl key revoke key_…`), or as `--id key_…`, the form the webhook commands
// first had, so that scripts written either way keep working (docs/settings.md, "How tripctl
// takes ids"). Options such as `--agency` name the object's parent, never the object itself.

type Parse = (value: string) => string;

/** `[id]`: the object's id as the command's first argument. */
export const objectIdArgument = (description: string, parse: Parse) =>
  new Argument('[id]', `${description}; or give it with --id`).argParser(parse);

/** `--id <id>`: the same id as an option. */
export const objectIdOption = (parse: Parse) =>
  new Option('--id <id>', 'the same id, as an option').argParser(parse);

/**
 * Runs before each action (a preAction hook of the program): for a command with an `[id]`, exactly
 * one id must have been given, in either place; it is left in the options as `id`, so that every
 * action reads it from one place. A missing or doubled id is a usage error (exit 2).
 */
export function settleObjectId(command: Command): void {
  if (command.registeredArguments[0]?.name() !== 'id') return;
  const positional = command.processedArgs[0] as string | undefined;
  const option = command.getOptionValue('id') as string | undefined;
  const usage = `tripctl ${command.parent?.name()} ${command.name()} <id>`;
  if (positional !== undefined && option !== undefined && positional !== option) {
    command.error(`error: two ids, ${positional} and --id ${option}: give one (${usage}).`, {
      code: 'tripctl.twoIds',
      exitCode: 2,
    });
  }
  const id = positional ?? option;
  if (id === undefined) {
    command.error(`error: which one? Give its id: ${usage} (or --id <id>).`, {
      code: 'tripctl.missingId',
      exitCode: 2,
    });
  }
  command.setOptionValue('id', id);
}
