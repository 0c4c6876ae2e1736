// What a row of the settings table says about one environment variable: how it is parsed (its
// kind, with the limits and default the reader applies), who reads it and what it means. The
// reader (env.ts) parses by the row and the docs' table is written from it, so neither a default
// nor a rule is written anywhere else.

/** The processes that read settings: the three services and the admin CLI. */
export type Reader = 'api' | 'recorder' | 'dispatcher' | 'tripctl';

interface About {
  /** Exactly the processes whose configuration reads it (test/config/readers.test.ts checks). */
  readers: readonly Reader[];
  /** One sentence for the docs. */
  meaning: string;
  /** Holds a password or key: in Kubernetes it comes from the Secret. */
  secret?: true;
  /** The default as the docs write it, where the value alone would mislead (a computed one). */
  defaultText?: string;
}

/** The kinds of value, each parsed one way by EnvReader.read. */
export type Rule =
  /** Free text; without a default, unset reads as undefined. */
  | { kind: 'text'; default?: string }
  /** One of a list; an unset one without a default reads as undefined. */
  | { kind: 'choice'; choices: readonly string[]; default?: string }
  | { kind: 'url'; protocols: readonly string[]; default?: string }
  /** Comma-separated URLs (a cluster's nodes), each checked, never echoed: they hold passwords. */
  | { kind: 'urls'; protocols: readonly string[]; default: string }
  | { kind: 'int'; default: number; min: number; max?: number }
  /** A decimal number, e.g. a share from 0 to 1. */
  | { kind: 'number'; default: number; min: number; max: number }
  | { kind: 'bool'; default: boolean }
  /** A D9 duration (`500ms`, `1m`, `3d`) in milliseconds; `allowZero` where 0 turns a thing off. */
  | { kind: 'duration'; default: string; allowZero?: true }
  /** Comma-separated durations, e.g. a retry schedule. */
  | { kind: 'durations'; default: string }
  /** Read by a library the process loads (the OpenTelemetry exporter), not by our code. */
  | { kind: 'external' };

export type Setting = About & Rule;

/** What reading a row gives: e.g. a number for a duration, undefined for an unset one without a default. */
export type ValueOf<S> = S extends { kind: 'int' | 'number' | 'duration' }
  ? number
  : S extends { kind: 'durations' }
    ? number[]
    : S extends { kind: 'urls' }
      ? string[]
      : S extends { kind: 'bool' }
        ? boolean
        : S extends { kind: 'choice'; choices: readonly (infer C)[] }
          ? S extends { default: string }
            ? C
            : C | undefined
          : S extends { kind: 'text' | 'url'; default: string }
            ? string
            : S extends { kind: 'text' | 'url' }
              ? string | undefined
              : never;
