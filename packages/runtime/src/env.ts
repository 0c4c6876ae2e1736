import { parseDuration } from './duration.ts';
import { SETTINGS, type ReadableName, type SettingValue } from './settings-table/index.ts';
import type { Rule, ValueOf } from './settings-table/row.ts';

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
 * Reads environment variables into typed values by the settings table's rows, collecting every
 * problem instead of stopping at the first, so a bad deployment is fixed in one round. Call
 * `done()` to throw them all at once. A value that is refused reads as its default meanwhile.
 */
export class EnvReader {
  private readonly problems: string[] = [];
  private readonly source: Source;
  constructor(source: Source = process.env) {
    this.source = source;
  }

  /** A setting of the table (settings-table/), parsed by its row. */
  read<N extends ReadableName>(name: N): SettingValue<N> {
    return this.parse(name, SETTINGS[name] as Rule) as SettingValue<N>;
  }

  /** A variable that is not the platform's (a development script's own), with its rule given here. */
  readOwn<R extends Rule>(name: string, rule: R): ValueOf<R> {
    return this.parse(name, rule) as ValueOf<R>;
  }

  /** Whether the variable is set to something other than blanks. */
  isSet(name: ReadableName): boolean {
    return this.raw(name) !== undefined;
  }

  /** A cross-field rule; `message` should name the variables involved. */
  check(ok: boolean, message: string): void {
    if (!ok) this.problems.push(message);
  }

  done(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }

  private raw(name: string): string | undefined {
    const value = this.source[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  private parse(name: string, rule: Rule): unknown {
    switch (rule.kind) {
      case 'text':
        return this.raw(name) ?? rule.default;
      case 'choice':
        return this.choice(name, rule.choices, rule.default);
      case 'url':
        return this.url(name, rule.protocols, rule.default);
      case 'urls':
        return this.urls(name, rule.protocols, rule.default);
      case 'int':
        return this.number(name, rule.default, rule.min, rule.max ?? Number.MAX_SAFE_INTEGER, true);
      case 'number':
        return this.number(name, rule.default, rule.min, rule.max, false);
      case 'bool':
        return this.bool(name, rule.default);
      case 'duration':
        return this.durations(name, rule.default, rule.allowZero ?? false)[0];
      case 'durations':
        return this.durations(name, rule.default, false);
      case 'external':
        throw new Error(`${name} is read by a library, not by our code`);
    }
  }

  private choice(name: string, choices: readonly string[], fallback: string | undefined) {
    const value = this.raw(name);
    if (value === undefined || choices.includes(value)) return value ?? fallback;
    const allowed = choices.length === 2 ? choices.join(' or ') : `one of ${choices.join(', ')}`;
    this.problems.push(`${name} must be ${allowed} (got '${value}')`);
    return fallback;
  }

  private url(name: string, protocols: readonly string[], fallback: string | undefined) {
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

  /**
   * One URL, or several separated by commas (a comma inside a password is written %2C). Every URL
   * is checked; a problem names the URL's position, never the URL, which holds a password.
   */
  private urls(name: string, protocols: readonly string[], fallback: string): string[] {
    const urls = (this.raw(name) ?? fallback).split(',').map((url) => url.trim());
    urls.forEach((url, index) => {
      const which = urls.length > 1 ? `${name}'s URL ${index + 1} of ${urls.length}` : name;
      if (url === '')
        return this.check(false, `${which} is empty: separate the nodes' URLs with single commas`);
      let protocol: string;
      try {
        protocol = new URL(url).protocol;
      } catch {
        return this.check(false, `${which} is not a URL`);
      }
      this.check(
        protocols.includes(protocol),
        `${which} must use ${protocols.join(' or ')} (got ${protocol})`,
      );
    });
    this.check(new Set(urls).size === urls.length, `${name} names the same URL twice`);
    return urls;
  }

  private number(name: string, fallback: number, min: number, max: number, whole: boolean): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!(whole ? Number.isInteger(parsed) : Number.isFinite(parsed)) || parsed < min || parsed > max) {
      const what = whole ? 'a whole number' : 'a number';
      this.problems.push(`${name} must be ${what} from ${min} to ${max} (got '${value}')`);
      return fallback;
    }
    return parsed;
  }

  /** `true` or `false` (any case), `1` or `0`. */
  private bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name)?.toLowerCase();
    if (value === undefined) return fallback;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    this.problems.push(`${name} must be true or false (got '${this.raw(name)}')`);
    return fallback;
  }

  /** A comma-separated list of durations, e.g. WEBHOOK_RETRY_DELAYS=1m,5m,30m; `allowZero` where 0 turns a thing off. */
  private durations(name: string, fallback: string, allowZero: boolean): number[] {
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
}

/** Settings every process shares (decisions.md D9). */
export function readCommonConfig(env: EnvReader) {
  const logLevel = env.read('LOG_LEVEL');
  return { databaseUrl: env.read('DATABASE_URL'), logLevel };
}
