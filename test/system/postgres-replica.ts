// A PostgreSQL primary and its streaming replica of the test's own, behind a proxy that follows the
// primary, through scripts/postgres-replica.sh: the proxy's URL (what the services use, as they use
// CloudNativePG's -rw Service), the faults (kill -9 of the primary, promotion, rejoin, switchover)
// and the servers' logs. The machine's own cluster is never touched: the script gives the servers
// their own data, ports and sockets.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createPool } from '@trips/db';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/postgres-replica.sh', import.meta.url));

export class LocalPostgresReplica {
  /** The proxy's URL, to the `postgres` database: the -rw Service's stand-in. */
  readonly url: string;
  /** Each node's own URL, in node order (1, 2). */
  readonly nodeUrls: string[];
  readonly dir: string;

  private constructor(dir: string, settings: Record<string, string>) {
    this.dir = dir;
    this.url = settings.DATABASE_URL!;
    this.nodeUrls = settings.POSTGRES_NODE_URLS!.split(',');
  }

  /** Starts a primary, its replica (synchronous unless `async`) and the proxy, in a fresh directory. */
  static async up(options: { async?: boolean } = {}): Promise<LocalPostgresReplica> {
    const dir = mkdtempSync(join(tmpdir(), 'trips-postgres-'));
    const args = ['up', '--dir', dir, ...(options.async ? ['--async'] : [])];
    const { stdout } = await LocalPostgresReplica.script(args, 120_000).catch(async (error: Error) => {
      // Whatever did start must not outlive the test.
      await LocalPostgresReplica.script(['down', '--dir', dir], 60_000).catch(() => {});
      throw error;
    });
    const settings = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    return new LocalPostgresReplica(dir, settings);
  }

  private static async script(args: string[], timeout: number) {
    try {
      return await run('bash', [script, ...args], { timeout });
    } catch (error) {
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(
        `postgres-replica.sh ${args[0]} failed: ${stderr || stdout || (error as Error).message}`,
        { cause: error },
      );
    }
  }

  private async do(command: string): Promise<number> {
    const { stdout } = await LocalPostgresReplica.script([command, '--dir', this.dir], 120_000);
    return Number(stdout.trim());
  }

  /** kill -9 of the primary's postmaster; answers its node (1 or 2). */
  killPrimary = () => this.do('kill-primary');
  /** The replica promoted; answers its node. */
  promote = () => this.do('promote');
  /** The node that is down rewound and started as the new primary's replica; answers it. */
  rejoin = () => this.do('rejoin');
  /** A planned switchover; answers the new primary's node. */
  switchover = () => this.do('switchover');
  /** When the last promotion completed (ms since the epoch), a switchover's included. */
  promotedAt(): number {
    return Number(readFileSync(join(this.dir, 'promoted_at'), 'utf8').trim());
  }

  /** The primary's node now (0 while there is none). */
  primary = () => this.do('primary');

  /** The proxy's URL to another database. */
  urlOf(database: string): string {
    const url = new URL(this.url);
    url.pathname = `/${database}`;
    return url.toString();
  }

  /** Creates a database on the primary, through the proxy; answers its URL. */
  async createDatabase(name: string): Promise<string> {
    const pool = createPool(this.url, { max: 1 });
    try {
      await pool.query(`CREATE DATABASE ${name}`);
    } finally {
      await pool.end();
    }
    return this.urlOf(name);
  }

  /** Each server's log and the proxy's, by file name, as they stand. */
  logs(): Record<string, string> {
    const read = (path: string) => {
      try {
        return readFileSync(join(this.dir, path), 'utf8');
      } catch {
        return '';
      }
    };
    return {
      'postgres-node1.log': read('node1/postgres.log'),
      'postgres-node2.log': read('node2/postgres.log'),
      'haproxy.log': read('haproxy.log'),
    };
  }

  /** Every server and the proxy stopped, the directory removed; safe to call twice. */
  async down(): Promise<void> {
    await LocalPostgresReplica.script(['down', '--dir', this.dir], 60_000);
  }
}
