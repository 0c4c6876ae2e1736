import { Command, CommanderError } from 'commander';
import type { Kysely } from 'kysely';
import { createDb, type Database } from '@trips/db';
import { createSettings, type Settings } from '@trips/settings';
import { registerAgency } from './agency.ts';
import { readBrokerConfig, readConfig } from './config.ts';
import type { Context, Env } from './context.ts';
import { registerDemo } from './demo.ts';
import { toCliError } from './errors.ts';
import { registerKey } from './key.ts';
import { registerMigrate } from './migrate.ts';
import { settleObjectId } from './object-id.ts';
import { TRIPCTL_VERSION } from './version.ts';
import type { Io } from './output.ts';
import { registerUser } from './user.ts';
import { registerWebhook } from './webhook.ts';

export interface RunOptions extends Io {
  env?: Env;
}

function buildProgram(ctx: Context): Command {
  const program = new Command('tripctl')
    .description(
      "The platform team's admin CLI for the trip service: schema, agencies, users, keys, webhooks, demo data.",
    )
    // Inherited by every subcommand made with .command(): commander reports its own usage errors
    // through these instead of writing to the process and exiting it, which keeps run() testable.
    .configureOutput({
      writeOut: (text) => ctx.io.stdout.write(text),
      writeErr: (text) => ctx.io.stderr.write(text),
    })
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .version(`tripctl ${TRIPCTL_VERSION}`, '-V, --version', 'print the version of tripctl')
    .hook('preAction', (_program, command) => settleObjectId(command));
  registerMigrate(program, ctx);
  registerAgency(program, ctx);
  registerUser(program, ctx);
  registerKey(program, ctx);
  registerWebhook(program, ctx);
  registerDemo(program, ctx);
  addHelpCommands(program);
  return program;
}

/**
 * `help [command...]` on the program and every command group (`tripctl help key create`).
 * commander's own help command answers `help bogus` with the whole help and no word of what was
 * wrong; this one says the command is unknown, as `tripctl bogus` does.
 */
function addHelpCommands(group: Command): void {
  const commands = group.commands.slice();
  if (commands.length === 0) return;
  group.helpCommand(false);
  group
    .command('help [command...]')
    .description('display help for command')
    .action((names: string[]) => {
      let command = group;
      for (const name of names) {
        const sub = command.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (!sub) {
          group.error(`error: unknown command '${name}'`, { code: 'commander.unknownCommand', exitCode: 2 });
        }
        command = sub;
      }
      command.help();
    });
  for (const command of commands) addHelpCommands(command);
}

/**
 * commander has already printed its message. Help that was asked for (`--help`, `help`) and
 * --version are a success; help shown because a command group was given no command is not.
 */
function commanderExitCode(error: CommanderError): number {
  const asked =
    error.code === 'commander.helpDisplayed' ||
    error.code === 'commander.version' ||
    (error.code === 'commander.help' && error.exitCode === 0);
  return asked ? 0 : 2;
}

/**
 * Runs one tripctl command line (without `node main.ts`) and answers its exit code: 0 done,
 * 1 operational failure, 2 bad arguments or configuration. It never throws and never exits the
 * process, and the database pool it may have opened is closed before it returns.
 */
export async function run(argv: string[], options: RunOptions): Promise<number> {
  const env = options.env ?? process.env;
  let db: Kysely<Database> | undefined;
  let databaseUrl: string | undefined;
  let settings: Settings | undefined;
  const ctx: Context = {
    io: { stdout: options.stdout, stderr: options.stderr, stdin: options.stdin },
    env,
    db() {
      if (!db) {
        databaseUrl = readConfig(env).databaseUrl;
        db = createDb(databaseUrl, { max: 2, applicationName: 'tripctl' });
      }
      return db;
    },
    settings() {
      if (!settings) {
        const broker = readBrokerConfig(env);
        // The platform team is told which setting allows a private webhook URL, in any environment.
        settings = createSettings({ db: ctx.db(), ...broker, nameDevelopmentSettings: true });
      }
      return settings;
    },
  };
  try {
    await buildProgram(ctx).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return commanderExitCode(error);
    const cliError = toCliError(error, databaseUrl);
    ctx.io.stderr.write(`error: ${cliError.message}\n`);
    return cliError.exitCode;
  } finally {
    // An open pool would keep the process alive for its idle timeout after the work is done.
    await db?.destroy().catch(() => {});
  }
}
