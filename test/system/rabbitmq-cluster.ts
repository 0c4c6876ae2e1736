// A three-node RabbitMQ cluster of the test's own, through scripts/rabbitmq-cluster.sh: the nodes'
// AMQP URLs, the faults (kill -9, a graceful stop, a start) and what the nodes say of the quorum
// queues. The machine's own broker is never touched: the script gives the nodes their own names,
// ports, data and cookie.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/rabbitmq-cluster.sh', import.meta.url));

export interface QueueState {
  name: string;
  type: string;
  leader: string;
  members: string[];
  online: string[];
}

export class LocalRabbitCluster {
  /** One AMQP URL per node, in node order (1, 2, 3). */
  readonly urls: string[];
  /** Erlang node names, in node order. */
  readonly nodes: string[];
  private readonly dir: string;
  private readonly running = new Set([1, 2, 3]);

  private constructor(dir: string, settings: Record<string, string>) {
    this.dir = dir;
    this.urls = settings.AMQP_URL!.split(',');
    this.nodes = settings.RABBITMQ_CLUSTER_NODES!.split(',');
  }

  /** Starts a cluster of its own (a fresh directory and node names), clustered and ready. */
  static async up(): Promise<LocalRabbitCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'trips-rabbitmq-'));
    const name = `trips-${randomBytes(3).toString('hex')}-`;
    const { stdout } = await LocalRabbitCluster.script(['up', '--dir', dir, '--name', name], 180_000).catch(
      async (error: Error) => {
        // Whatever nodes did start must not outlive the test.
        await LocalRabbitCluster.script(['down', '--dir', dir], 180_000).catch(() => {});
        throw error;
      },
    );
    const settings = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    return new LocalRabbitCluster(dir, settings);
  }

  private static async script(args: string[], timeout: number) {
    try {
      return await run('bash', [script, ...args], { timeout });
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(
        `rabbitmq-cluster.sh ${args[0]} failed: ${stderr || stdout || (error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  }

  private do(args: string[], timeout = 120_000) {
    return LocalRabbitCluster.script([...args, '--dir', this.dir], timeout);
  }

  /** 1, 2 or 3 for a node name. */
  numberOf(node: string): number {
    return this.nodes.indexOf(node) + 1;
  }

  /** kill -9: the node is gone at once, as in a crash of its machine. */
  async kill(n: number): Promise<void> {
    await this.do(['kill', String(n)]);
    this.running.delete(n);
  }

  /** rabbitmqctl stop: the node leaves gracefully (its queue leaders hand over first). */
  async stop(n: number): Promise<void> {
    this.running.delete(n);
    await this.do(['stop', String(n)]);
  }

  /** Starts a stopped node again on its data; answers once it runs (it rejoins by itself). */
  async start(n: number): Promise<void> {
    await this.do(['start', String(n)]);
    this.running.add(n);
  }

  /** The quorum queues whose names start with `prefix`, as a running node sees them. */
  async queues(prefix: string): Promise<QueueState[]> {
    const all = await this.ctlJson<QueueState>([
      'list_queues',
      'name',
      'type',
      'leader',
      'members',
      'online',
    ]);
    return all.filter((q) => q.name.startsWith(prefix));
  }

  /** A rabbitmqctl listing, as a running node answers it in JSON. */
  async ctlJson<Row>(args: string[]): Promise<Row[]> {
    const n = [...this.running][0]!;
    const { stdout } = await this.do(['ctl', String(n), ...args, '--formatter', 'json']);
    return JSON.parse(stdout) as Row[];
  }

  /** Each node's log as it stands, in node order ('' for a node that wrote none). */
  nodeLogs(): string[] {
    return [1, 2, 3].map((n) => {
      try {
        return readFileSync(join(this.dir, `node${n}`, 'log', 'node.log'), 'utf8');
      } catch {
        return '';
      }
    });
  }

  /** Every node stopped and its directory removed; safe to call twice. */
  async down(): Promise<void> {
    await this.do(['down'], 180_000).catch((error: Error) => {
      if (!/no cluster set up|holds no cluster/.test(error.message)) throw error;
    });
    this.running.clear();
  }
}
