// The demo simulator of scripts/start.sh: a planner at the demo agency at work, one change every
// SIMULATOR_INTERVAL (3s), written as the host application writes them (plain SQL on the write
// contract, through @trips/testkit's createActivity: trips, itineraries, options, payments,
// contacts). Each change prints one line saying which events it must make, so a newcomer can
// follow it to the demo receiver ("webhook ✓") and to GET /api/v1/events.
import { createDb } from '@trips/db';
import {
  createLogger,
  EnvReader,
  formatDuration,
  Loop,
  readCommonConfig,
  stopOnSignals,
} from '@trips/runtime';
import { createActivity, type CommittedChange } from '@trips/testkit';

const env = new EnvReader();
const { databaseUrl } = readCommonConfig(env);
const agencyId = env.readOwn('SIMULATOR_AGENCY', { kind: 'text', default: '' });
const intervalMs = env.readOwn('SIMULATOR_INTERVAL', { kind: 'duration', default: '3s' });
/** The recorder's grouping delays, read from the same variables, to say when a *.updated event comes. */
const quietMs = env.read('EVENT_GROUP_QUIET');
const maxMs = env.read('EVENT_GROUP_MAX');
env.check(/^agy_/.test(agencyId), `SIMULATOR_AGENCY must be the demo agency's id (agy_…), got '${agencyId}'`);
env.done();

const say = (line: string) => process.stdout.write(`${line}\n`);

function describe(change: CommittedChange): string {
  const now = change.events.map(
    (e) => `${e.type}${Object.keys(e.data).length ? ` ${JSON.stringify(e.data)}` : ''} for ${e.objectId}`,
  );
  const grouped = change.touched.map(
    (o) =>
      `${o.type}.updated for ${o.id} once it has had no change for ${formatDuration(quietMs)} ` +
      `(at most ${formatDuration(maxMs)} after the first)`,
  );
  const makes = [...now, ...grouped].join(', ') || 'no event (templates and draft payments make none)';
  return `simulator ✎ ${change.action} → ${makes}`;
}

const db = createDb(databaseUrl, { max: 1, applicationName: 'demo-simulator' });
const activity = createActivity(db, { agencyId });
const loop = new Loop(
  'simulator',
  async () => {
    try {
      say(describe(await activity.step()));
    } catch (error) {
      // The database restarting, say: the next round settles the change in doubt and goes on.
      say(
        `simulator ✗ a change failed (${(error as Error).message}); next try in ${formatDuration(intervalMs)}`,
      );
    }
    return 0; // wait the interval either way
  },
  intervalMs,
  createLogger('simulator'),
);

// The current change commits or rolls back whole before the connection closes.
stopOnSignals(async () => {
  await loop.stop();
  await db.destroy();
}, createLogger('simulator'));
say(
  `simulator: one change every ${formatDuration(intervalMs)} in ${agencyId} ` +
    `(SIMULATOR_INTERVAL sets the pace, SIMULATOR=off leaves it out)`,
);
loop.start();
