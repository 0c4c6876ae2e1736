// A PostgreSQL primary and its streaming replica of the test's own, behind a proxy that follows the
// primary, through scripts/postgres-replica.sh: the proxy's URL (what the services use, as they use
// CloudNativePG's -rw Service), the faults (kill -9 of the primary, promotion, rejoin, switchover)
// and the servers' logs; or, `single`, one server alone that a test stops and starts. The machine's
// own cluster is never touched: the script gives the servers their own data, ports and sockets.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPool } from '@trips/db';
import { runScript, startOnce, upInFreshDir } from './own-servers.ts';

const script = 'postgres-replica.sh';

/**
 * The servers are the machine's own PostgreSQL 15 binaries, as on Debian and in CI. A laptop whose
 * tests run their services in containers may have none: then the tests that need servers of their own skip.
 */
export const postgresInstalled =
  existsSync(`${process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'}/pg_ctl`) ||
  spawnSync('bash', ['-c', 'command -v pg_config']).status === 0;

export class LocalPostgresReplica {
  /** The proxy's URL, to the `postgres` database: the -rw Service's stand-in (`single`: the server's). */
  readonly url: string;
  /** Each node's own URL, in node order (1, 2). */
  readonly nodeUrls: string[];
  readonly dir: string;

  private constructor(dir: string, settings: Record<string, string>) {
    this.dir = dir;
    this.url = settings.DATABASE_URL!;
    this.nodeUrls = settings.POSTGRES_NODE_URLS!.split(',');
  }

  /**
   * Starts a primary, its replica (synchronous unless `async`) and the proxy, in a fresh directory;
   * `single`: the primary alone, no proxy.
   */
  static async up(options: { async?: boolean; single?: boolean } = {}): Promise<LocalPostgresReplica> {
    const flags = [...(options.async ? ['--async'] : []), ...(options.single ? ['--single'] : [])];
    const { dir, settings } = await upInFreshDir(script, flags, { up: 120_000, down: 60_000 });
    return new LocalPostgresReplica(dir, settings);
  }

  private async do(command: string): Promise<number> {
    const { stdout } = await runScript(script, [command, '--dir', this.dir], 120_000);
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

  /**
   * Stops node `n` (fast: its sessions are cut off, as in a crash of the server or a failover) and
   * answers the function that starts it again and waits until it accepts connections; that one is
   * safe to call twice, so a test can keep it for its afterAll.
   */
  async stop(n: number): Promise<() => Promise<void>> {
    await runScript(script, ['stop', String(n), '--dir', this.dir], 120_000);
    return startOnce(async () => {
      await runScript(script, ['start', String(n), '--dir', this.dir], 120_000);
    });
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
    await runScript(script, ['down', '--dir', this.dir], 60_000);
  }
}
