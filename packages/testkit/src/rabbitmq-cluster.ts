// A RabbitMQ cluster of the test's own, through scripts/rabbitmq-cluster.sh: three nodes for the
// failover test, one for a test that restarts its broker. The nodes' AMQP URLs, the faults (kill -9,
// a graceful stop, a start, the application stopped) and what the nodes say of the quorum queues.
// The machine's own broker is never touched: the script gives the nodes their own names, ports,
// data and cookie.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runScript, startOnce, upInFreshDir } from './own-servers.ts';

const script = 'rabbitmq-cluster.sh';

/**
 * The nodes are the machine's own RabbitMQ installation, as on Debian and in CI. A laptop whose tests
 * run their services in containers may have none: then the tests that need nodes of their own skip.
 */
export const rabbitmqInstalled =
  spawnSync('bash', ['-c', 'command -v rabbitmq-server || test -x /usr/lib/rabbitmq/bin/rabbitmq-server'])
    .status === 0;

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
  private readonly running: Set<number>;

  private constructor(dir: string, settings: Record<string, string>) {
    this.dir = dir;
    this.urls = settings.AMQP_URL!.split(',');
    this.nodes = settings.RABBITMQ_CLUSTER_NODES!.split(',');
    this.running = new Set(this.nodes.map((_, i) => i + 1));
  }

  /** Starts a cluster of its own (a fresh directory and node names) of `nodes` nodes, ready. */
  static async up(options: { nodes?: 1 | 2 | 3 } = {}): Promise<LocalRabbitCluster> {
    const name = `trips-${randomBytes(3).toString('hex')}-`;
    const args = ['--name', name, '--nodes', String(options.nodes ?? 3)];
    const { dir, settings } = await upInFreshDir(script, args, { up: 180_000, down: 180_000 });
    return new LocalRabbitCluster(dir, settings);
  }

  private do(args: string[], timeout = 120_000) {
    return runScript(script, [...args, '--dir', this.dir], timeout);
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

  /**
   * Stops node `n`'s RabbitMQ application (rabbitmqctl stop_app: the Erlang node stays up, its
   * clients are cut off) and answers the function that starts it again and waits until it runs;
   * that one is safe to call twice, so a test can keep it for its afterAll.
   */
  async stopApp(n: number): Promise<() => Promise<void>> {
    await this.do(['ctl', String(n), 'stop_app']);
    return startOnce(async () => {
      await this.do(['ctl', String(n), 'start_app']);
      await this.do(['ctl', String(n), 'await_startup']);
    });
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
    return this.nodes.map((_, i) => {
      const n = i + 1;
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
