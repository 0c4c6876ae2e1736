// The settings table: every environment variable the services and tripctl read, in one place.
// Each process's config reads its variables through EnvReader.read(name), which parses by the row,
// so a default, a limit or a parse rule is written only here; the docs' configuration tables are
// generated from it (`pnpm docs:settings`). Rules between settings stay with the config that needs
// them. Sections are the docs' tables.
import { apiSettings } from './api.ts';
import { dispatcherSettings } from './dispatcher.ts';
import { recorderSettings } from './recorder.ts';
import type { Setting, ValueOf } from './row.ts';
import { sharedSettings } from './shared.ts';
import { tracingSettings } from './tracing.ts';

export type { Reader, Setting } from './row.ts';

export const SETTINGS = {
  ...sharedSettings,
  ...apiSettings,
  ...recorderSettings,
  ...dispatcherSettings,
  ...tracingSettings,
} as const;

export type SettingName = keyof typeof SETTINGS;

/** The names our code reads (not those only a library reads). */
export type ReadableName = {
  [N in SettingName]: (typeof SETTINGS)[N] extends { kind: 'external' } ? never : N;
}[SettingName];

/** What `EnvReader.read(name)` gives for that setting. */
export type SettingValue<N extends ReadableName> = ValueOf<(typeof SETTINGS)[N]>;

/** The table in the docs' order: one table each. */
export const SETTING_SECTIONS = {
  shared: sharedSettings,
  api: apiSettings,
  recorder: recorderSettings,
  dispatcher: dispatcherSettings,
  tracing: tracingSettings,
} as const satisfies Record<string, Record<string, Setting>>;
