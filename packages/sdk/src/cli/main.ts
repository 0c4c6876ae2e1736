#!/usr/bin/env node
// `trips`: the developer's command line of @trips/sdk. Reads the key from TRIPS_API_KEY (never a
// flag: a flag ends up in shell history and process lists) and the API from TRIPS_BASE_URL.
import { parseArgs } from 'node:util';
import { TripService } from '../client.ts';
import type { EventType } from '../openapi-types.ts';
import { VERSION } from '../version.ts';
import { get, tail } from './commands.ts';
import { listen } from './listen.ts';
import { explain } from './output.ts';

const HELP = `trips ${VERSION}: the trip service's API from a terminal.

  trips listen --forward-to <url> [--events <type,…>] [--after <cursor>] [--secret <whsec_…>]
      Forward new events to a local receiver, signed as real webhook deliveries.
  trips events tail [--events <type,…>] [--after <cursor>] [--json]
      Print events as they are recorded.
  trips trips get <id>        (also: trips payments get <id>, trips contacts get <id>)
      Print one object as JSON.

Environment: TRIPS_API_KEY (required), TRIPS_BASE_URL (default http://localhost:3000).
`;

const out = (text: string) => void process.stdout.write(text);

class UsageError extends Error {}

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

function client(): { client: TripService; baseUrl: string } {
  const apiKey = process.env.TRIPS_API_KEY;
  const baseUrl = process.env.TRIPS_BASE_URL || 'http://localhost:3000';
  if (!apiKey)
    throw new UsageError("TRIPS_API_KEY is not set: export a key from the agency's API settings (tps_…).");
  try {
    return { client: new TripService({ apiKey, baseUrl, maxRetries: 3 }), baseUrl };
  } catch (error) {
    throw new UsageError(`TRIPS_BASE_URL: ${(error as Error).message}`);
  }
}

function forwardUrl(value: string | undefined): string {
  if (!value)
    throw new UsageError('listen needs --forward-to <url>, e.g. --forward-to http://localhost:4000/webhooks');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(
      `--forward-to must be a full URL such as http://localhost:4000/webhooks; got '${value}'.`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(
      `--forward-to must be a full URL such as http://localhost:4000/webhooks; got '${value}'.`,
    );
  return url.href;
}

/** Ctrl-C and SIGTERM stop the loop; the command then prints where to resume. */
function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parse(argv);
  if (values.version) return out(`${VERSION}\n`);
  const [command, sub, id] = positionals;
  if (values.help || !command) return out(HELP);
  const types = values.events ? (values.events.split(',').map((t) => t.trim()) as EventType[]) : undefined;
  if (command === 'listen') {
    const forwardTo = forwardUrl(values['forward-to']);
    const { client: api } = client();
    const signal = stopSignal();
    const cursor = await listen(api, {
      forwardTo,
      types,
      after: values.after,
      secret: values.secret,
      signal,
      out,
    });
    return out(
      `\nStopped. To resume where this run left off:\n  trips listen --forward-to ${forwardTo} --after ${cursor}\n`,
    );
  }
  if (command === 'events' && sub === 'tail') {
    const { client: api } = client();
    const signal = stopSignal();
    const cursor = await tail(api, { types, after: values.after, json: values.json ?? false, signal }, out);
    return out(`\nStopped. Resume with --after ${cursor}\n`);
  }
  if (['trips', 'payments', 'contacts'].includes(command) && sub === 'get') {
    if (!id) throw new UsageError(`usage: trips ${command} get <id>`);
    return get(client().client, command, id, out);
  }
  throw new UsageError(`unknown command '${positionals.join(' ')}'. Run trips --help.`);
}

run(process.argv.slice(2)).then(
  () => process.exit(0),
  (error: unknown) => {
    const usage = error instanceof UsageError;
    process.stderr.write(
      `trips: ${usage ? error.message : explain(error, process.env.TRIPS_BASE_URL || 'http://localhost:3000')}\n`,
    );
    process.exit(usage ? 2 : 1);
  },
);
