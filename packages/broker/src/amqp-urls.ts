// AMQP_URL: the broker, or the nodes of a RabbitMQ cluster, one URL each, tried in turn
// (docs/operations.md, "Sizing"). Every process that talks to RabbitMQ reads it here, so they all
// accept the same lists and refuse the same mistakes.
import amqplib from 'amqplib';
import type { EnvReader } from '@trips/runtime';

/**
 * AMQP_URL as a list: one URL, or several separated by commas (a comma inside a password is
 * written %2C). Every URL is checked at start by the settings table's rule; a problem names the
 * URL's position, never the URL, which holds a password.
 */
export function readAmqpUrls(env: EnvReader): string[] {
  return env.read('AMQP_URL');
}

/** Where a URL points, without its credentials: for logs and errors. */
export function brokerAddress(url: string): string {
  try {
    const { protocol, hostname, port } = new URL(url);
    return `${hostname}:${port || (protocol === 'amqps:' ? 5671 : 5672)}`;
  } catch {
    return 'an unparsable URL';
  }
}

/**
 * A connection to the first of `urls` that accepts one, tried in the order given; for short-lived
 * connections (an owner's test event or redelivery). Each try may take `options.timeout`.
 */
export async function connectToFirst(
  urls: readonly string[],
  options: { timeout: number },
): Promise<amqplib.ChannelModel> {
  const failures: string[] = [];
  for (const url of urls) {
    try {
      return await amqplib.connect(url, options);
    } catch (error) {
      failures.push(`${brokerAddress(url)}: ${(error as Error).message}`);
    }
  }
  throw new Error(failures.join('; '));
}
