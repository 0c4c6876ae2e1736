import { parseDuration } from './duration.ts';

/** A setting that could not be used; the message names the variable so an operator can fix it. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Source = Record<string, string | undefined>;

/**
 * Reads environment variables into typed values, collecting every problem instead of stopping at
 * the first, so a bad deployment is fixed in one round. Call `done()` to throw them all at once.
 */
export class EnvReader {
  private readonly problems: string[] = [];
  private readonly source: Source;
  constructor(source: Source = process.env) {
    this.source = source;
  }

  private raw(name: string): string | undefined {
    const value = this.source[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optionalString(name: string): string | undefined {
    return this.raw(name);
  }

  url(name: string, fallback: string | undefined, protocols: string[]): string | undefined {
    const value = this.raw(name) ?? fallback;
    if (value === undefined) return undefined;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) {
        this.problems.push(`${name} must use ${protocols.join(' or ')} (got ${parsed.protocol})`);
      }
    } catch {
      this.problems.push(`${name} is not a URL`);
    }
    return value;
  }

  int(name: string, fallback: number, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      this.problems.push(`${name} must be a whole number from ${min} to ${max} (got '${value}')`);
      return fallback;
    }
    return parsed;
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    this.problems.push(`${name} must be true or false (got '${value}')`);
    return fallback;
  }

  /** One duration; `allowZero` for a setting whose 0 turns something off. */
  duration(name: string, fallback: string, { allowZero = false } = {}): number {
    return this.durations(name, fallback, { allowZero })[0]!;
  }

  /** A comma-separated list of durations, e.g. WEBHOOK_RETRY_DELAYS=1m,5m,30m. */
  durations(name: string, fallback: string, { allowZero = false } = {}): number[] {
    const value = this.raw(name) ?? fallback;
    try {
      const list = value.split(',').map(parseDuration);
      if (!allowZero && list.some((ms) => ms <= 0)) throw new Error('durations must be greater than zero');
      return list;
    } catch (error) {
      this.problems.push(`${name}: ${(error as Error).message}`);
      return fallback.split(',').map(parseDuration);
    }
  }

  /** A cross-field rule; `message` should name the variables involved. */
  check(ok: boolean, message: string): void {
    if (!ok) this.problems.push(message);
  }

  done(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}

/** Settings every service shares (decisions.md D9). */
export function readCommonConfig(env: EnvReader) {
  const logLevel = env.string('LOG_LEVEL', 'info');
  env.check(
    (LOG_LEVELS as readonly string[]).includes(logLevel),
    `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got '${logLevel}')`,
  );
  return {
    databaseUrl: env.url('DATABASE_URL', 'postgres://localhost:5432/trips', ['postgres:', 'postgresql:'])!,
    logLevel,
  };
}

/** pino's levels, and `silent`. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
