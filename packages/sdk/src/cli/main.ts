#!/usr/bin/env node
// `trips`: the developer's command line of @trips/sdk. Reads the key from TRIPS_API_KEY (never a
// flag: a flag ends up in shell history and process lists) and the API from TRIPS_BASE_URL.
import { parseArgs } from 'node:util';
import { TripService } from '../client.ts';
import { TripServiceError } from '../errors.ts';
import { defaultBaseUrl, INVALID_KEY, isWellFormedKey } from '../http.ts';
import type { EventType } from '../openapi-types.ts';
import { VERSION } from '../version.ts';
import { get, tail } from './commands.ts';
import { listen, newSecret } from './listen.ts';
import { explain } from './output.ts';

const HELP = `trips ${VERSION}: the trip service's API from a terminal.

  trips listen --forward-to <url> [--events <type,…>] [--after <cursor>] [--secret <whsec_…>]
      Forward new events as webhook deliveries. Each body is signed with a per-run secret
      (printed at start in both its forms; --secret sets your own, in either) with both
      header sets, Service-Signature and Standard Webhooks', and goes wherever --forward-to
      says: point it at your own receiver.
  trips events tail [--events <type,…>] [--after <cursor>] [--json]
      Print events as they are recorded.
  trips trips get <id>        (also: trips payments get <id>, trips contacts get <id>)
      Print one object as JSON.

Environment: TRIPS_API_KEY (required), TRIPS_BASE_URL (default http://localhost:3000).
`;

const out = (text: string) => void process.stdout.write(text);
const warn = (text: string) => void process.stderr.write(text);

class UsageError extends Error {}

/** The command that goes on from where this run is, once it has a cursor; printed on any exit. */
let resumeWith: ((cursor: string) => string) | undefined;
let cursorReached: string | undefined;

function exit(code: number, message?: string): void {
  if (message) warn(`trips: ${message}\n`);
  if (resumeWith && cursorReached)
    out(`To resume where this run left off:\n  ${resumeWith(cursorReached)}\n`);
  process.exit(code);
}

/** An argument as a POSIX shell reads it back unchanged. */
const shellWord = (word: string) =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'forward-to': { type: 'string' },
        events: { type: 'string' },
        after: { type: 'string' },
        secret: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function client(): TripService {
  const apiKey = process.env.TRIPS_API_KEY;
  if (!apiKey)
    throw new UsageError("TRIPS_API_KEY is not set: export a key from the agency's API settings (tps_…).");
  if (!isWellFormedKey(apiKey))
    throw new UsageError(
      `TRIPS_API_KEY: ${INVALID_KEY}. Copy it again from the agency's API settings: tps_ and letters and digits, nothing around it.`,
    );
  try {
    return new TripService({ apiKey, baseUrl: defaultBaseUrl(), maxRetries: 3 });
  } catch (error) {
    throw new UsageError(`TRIPS_BASE_URL: ${(error as Error).message}`);
  }
}

function forwardUrl(value: string | undefined): string {
  if (!value)
    throw new UsageError('listen needs --forward-to <url>, e.g. --forward-to http://localhost:4100/webhooks');
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:')
    throw new UsageError(
      `--forward-to must be a full URL such as http://localhost:4100/webhooks; got '${value}'.`,
    );
  return url.href;
}

/**
 * Ctrl-C and SIGTERM stop the loop, which then says where to resume; a second Ctrl-C (a forward
 * still waiting on the receiver, say) ends the command at once, saying it too.
 */
function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => (controller.signal.aborted ? exit(130) : controller.abort());
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return controller.signal;
}

const onCursor = (cursor: string) => void (cursorReached = cursor);

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parse(argv);
  if (values.version) return out(`${VERSION}\n`);
  const [command, sub, id] = positionals;
  if (values.help || !command) return out(HELP);
  const types = values.events ? (values.events.split(',').map((t) => t.trim()) as EventType[]) : undefined;
  const events = types ? ['--events', types.join(',')] : [];
  if (command === 'listen') {
    const forwardTo = forwardUrl(values['forward-to']);
    const api = client();
    const secret = { value: values.secret ?? newSecret(), given: values.secret !== undefined };
    // The same secret too, so that a receiver set up with it goes on verifying.
    const words = ['trips', 'listen', '--forward-to', forwardTo, ...events, '--secret', secret.value];
    resumeWith = (cursor) => [...words, '--after', cursor].map(shellWord).join(' ');
    cursorReached = values.after;
    await listen(api, { forwardTo, types, after: values.after, secret, signal: stopSignal(), out, onCursor });
    return out('\nStopped.\n');
  }
  if (command === 'events' && sub === 'tail') {
    const api = client();
    const json = values.json ?? false;
    const words = ['trips', 'events', 'tail', ...events, ...(json ? ['--json'] : [])];
    resumeWith = (cursor) => [...words, '--after', cursor].map(shellWord).join(' ');
    cursorReached = values.after;
    await tail(api, { types, after: values.after, json, signal: stopSignal(), onCursor }, out, warn);
    return out('\nStopped.\n');
  }
  if (['trips', 'payments', 'contacts'].includes(command) && sub === 'get') {
    if (!id) throw new UsageError(`usage: trips ${command} get <id>`);
    return get(client(), command, id, out);
  }
  throw new UsageError(`unknown command '${positionals.join(' ')}'. Run trips --help.`);
}

function failed(error: unknown): void {
  if (error instanceof UsageError) return exit(2, error.message);
  // A cursor the API refused (expired, or not one of its own) is no place to resume from.
  if (error instanceof TripServiceError && (error.code === 'cursor_expired' || error.param === 'after'))
    resumeWith = undefined;
  exit(1, explain(error, defaultBaseUrl()));
}
// Whatever ends the run, a bug's exception included, it ends saying where to resume.
process.on('uncaughtException', failed);
run(process.argv.slice(2)).then(() => exit(0), failed);
