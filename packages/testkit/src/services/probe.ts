import { connect } from 'node:net';

/** The three services every test needs, by the variable that locates each and docker-compose.yml's name. */
export const backingServices = [
  { name: 'PostgreSQL', variable: 'DATABASE_URL', defaultPort: 5432, compose: 'postgres' },
  { name: 'RabbitMQ', variable: 'AMQP_URL', defaultPort: 5672, compose: 'rabbitmq' },
  { name: 'Redis', variable: 'REDIS_URL', defaultPort: 6379, compose: 'redis' },
] as const;

export type BackingService = (typeof backingServices)[number];

/** host:port of a service's URL (never its credentials, so that it may be printed). */
export function address(service: BackingService, url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname}:${port || service.defaultPort}`;
}

/** Whether something accepts a TCP connection at the URL's host and port within `timeoutMs`. */
function answers(service: BackingService, url: string, timeoutMs: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({
      host: hostname.replace(/^\[|\]$/g, ''),
      port: Number(port) || service.defaultPort,
    });
    const settle = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(timeoutMs, () => settle(false));
    socket.once('connect', () => settle(true));
    socket.once('error', () => settle(false));
  });
}

/**
 * The services that do not answer at the URLs `env` names, all probed at once. A connection is
 * enough: on loopback a refusal is immediate, so when everything runs this costs a millisecond.
 */
export async function silentServices(
  env: Record<string, string | undefined>,
  timeoutMs = 1_000,
): Promise<{ service: BackingService; url: string }[]> {
  const probed = await Promise.all(
    backingServices.map(async (service) => {
      const url = env[service.variable];
      if (!url || !URL.canParse(url)) throw new Error(`${service.variable} is not a URL: "${url ?? ''}"`);
      return { service, url, answered: await answers(service, url, timeoutMs) };
    }),
  );
  return probed.filter((p) => !p.answered).map(({ service, url }) => ({ service, url }));
}

/** "PostgreSQL at 127.0.0.1:5432 and Redis at 127.0.0.1:6379 do not answer". */
export function describeSilent(silent: { service: BackingService; url: string }[]): string {
  const names = silent.map(({ service, url }) => `${service.name} at ${address(service, url)}`);
  const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0];
  return `${list} ${names.length > 1 ? 'do' : 'does'} not answer`;
}
