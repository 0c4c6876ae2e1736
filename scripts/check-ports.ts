// Tries each port scripts/start.sh is about to use the way the services will listen on it (every
// address), so that start.sh refuses to start with a word on which port and which variable, rather
// than a service dying half-way through the start. Usage: node scripts/check-ports.ts
// "<what>=<VARIABLE>=<port>" …; prints one line per port in use and exits 1 if there is any.
import { createServer } from 'node:net';

function inUse(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen(port, () => server.close(() => resolve(undefined)));
  });
}

let busy = 0;
for (const spec of process.argv.slice(2)) {
  const [what, variable, text] = spec.split('=') as [string, string, string];
  const port = Number(text);
  if (port === 0) continue; // any free port
  const problem = await inUse(port);
  if (problem === undefined) continue;
  busy += 1;
  const why = problem === 'EADDRINUSE' ? 'is in use' : `cannot be listened on (${problem})`;
  console.error(
    `start.sh: port ${port} ${why}; ${what} listens there. Stop what uses it, or set ${variable} to a free port, e.g. ${variable}=${port + 100} bash scripts/start.sh`,
  );
}
process.exitCode = busy > 0 ? 1 : 0;
