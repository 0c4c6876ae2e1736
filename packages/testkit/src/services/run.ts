// Runs a command (test.sh's jest runs) with this run's PostgreSQL, RabbitMQ and Redis:
//   node packages/testkit/src/services/run.ts COMMAND [ARGS…]
// The ones at DATABASE_URL, AMQP_URL and REDIS_URL when they answer; else containers started here
// for the whole command, their URLs in its environment, and stopped when it ends; neither, one
// message and exit 1 (choose.ts).
import { spawn } from 'node:child_process';
import { startTestContainers, type TestContainers } from './containers.ts';
import { chooseTestServices, NoTestServices } from './choose.ts';
import { address, backingServices } from './probe.ts';

const [command, ...args] = process.argv.slice(2);
if (!command) throw new Error('usage: run.ts COMMAND [ARGS…]');

let containers: TestContainers | undefined;
try {
  if ((await chooseTestServices(process.env)) === 'containers') {
    console.error(
      'test services: starting PostgreSQL, RabbitMQ and Redis in containers (a first run pulls them)',
    );
    containers = await startTestContainers();
  }
} catch (error) {
  // The message says what to do; a stack trace would only bury it.
  const message = (error as Error).message;
  console.error(error instanceof NoTestServices ? message : `test services: ${message}`);
  process.exit(1);
}
const env = { ...process.env, ...containers?.env };
const where = backingServices.map((s) => `${s.name} ${address(s, env[s.variable]!)}`).join(', ');
console.error(`test services: ${containers ? 'containers' : "this machine's"}: ${where}`);

// Ctrl-C reaches the command too (one process group): wait for it to end, then stop the containers.
process.on('SIGINT', () => {});
const child = spawn(command, args, { stdio: 'inherit', env });
process.on('SIGTERM', () => child.kill('SIGTERM'));
const code = await new Promise<number>((resolve) => child.on('exit', (status) => resolve(status ?? 1)));
await containers?.stop();
process.exit(code);
