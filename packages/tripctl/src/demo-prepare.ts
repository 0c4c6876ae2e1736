import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { findUserForSignIn } from '@trips/db/users';
import { activeWebhookIdsAt, findDeliveryTarget } from '@trips/db/webhooks';
import { PLATFORM, verifyPassword } from '@trips/settings';
import type { Context } from './context.ts';
import { reuseDemoAgency, seedDemoAgency, type DemoSeed } from './demo-seed.ts';

// The demo of scripts/start.sh, kept from one run to the next: a restart must not revoke the key a
// running client uses, sign the owner out, or add another webhook. Keys are stored hashed and a
// webhook's secret is shown once, so their plaintext is kept in a state file of the checkout
// (.demo/, git-ignored, readable by its owner alone); the database says whether each still holds.

/** What the state file keeps between runs. */
interface DemoState {
  key: string;
  webhook_id: string;
  webhook_secret: string;
}

export interface PreparedDemo {
  seed: DemoSeed;
  webhook: { id: string; secret: string };
  /** What this run had to make anew; false: kept from an earlier run. */
  made: { agency: boolean; key: boolean; webhook: boolean; password: boolean };
}

export interface PrepareInput {
  /** The demo receiver's URL; the kept webhook is moved here if it pointed elsewhere. */
  receiverUrl: string;
  statePath: string;
  ownerPassword: string;
  scopes: string[];
}

export async function prepareDemo(ctx: Context, input: PrepareInput): Promise<PreparedDemo> {
  const state = await readState(input.statePath);
  const reused = await reuseDemoAgency(ctx.db(), { scopes: input.scopes, keepKey: state?.key });
  const seed = reused ?? (await seedDemoAgency(ctx.db(), { scopes: input.scopes }));
  const webhook = await keepWebhook(ctx, seed.agencyId, input.receiverUrl, state);
  const passwordSet = await keepPassword(ctx, seed, input.ownerPassword);
  await writeState(input.statePath, {
    key: seed.key.key,
    webhook_id: webhook.id,
    webhook_secret: webhook.secret,
  });
  return {
    seed,
    webhook: { id: webhook.id, secret: webhook.secret },
    made: { agency: !reused, key: !reused?.keyKept, webhook: webhook.made, password: passwordSet },
  };
}

/**
 * The state's webhook while it belongs to this agency and its kept secret still signs (an owner
 * may have rotated it on the page), switched on and pointed at the receiver; else a new one for
 * every event. Any other webhook still on at the receiver's URL is switched off: the receiver knows
 * one secret, so their deliveries would arrive as bad signatures.
 */
async function keepWebhook(
  ctx: Context,
  agencyId: string,
  url: string,
  state: DemoState | undefined,
): Promise<{ id: string; secret: string; made: boolean }> {
  const settings = ctx.settings();
  const target = state && (await findDeliveryTarget(ctx.db(), state.webhook_id));
  let webhook: { id: string; secret: string; made: boolean };
  if (target && target.agency_id === agencyId && target.secrets.includes(state!.webhook_secret)) {
    if (target.url !== url) await settings.updateWebhook(PLATFORM, target.id, { url });
    if (target.disabled_at) await settings.setWebhookEnabled(PLATFORM, target.id, true);
    webhook = { id: target.id, secret: state!.webhook_secret, made: false };
  } else {
    const created = await settings.createWebhook(PLATFORM, {
      agencyId,
      url,
      eventTypes: [...EVENT_TYPE_NAMES],
      description: 'demo receiver',
    });
    webhook = { id: created.webhook.id, secret: created.secret, made: true };
  }
  for (const id of await activeWebhookIdsAt(ctx.db(), url)) {
    if (id !== webhook.id) await settings.setWebhookEnabled(PLATFORM, id, false);
  }
  return webhook;
}

/**
 * Sets the owner's password only when it is not this one already: a new password signs the owner
 * out everywhere, which a restart of the demo must not do. Answers whether it was set.
 */
async function keepPassword(ctx: Context, seed: DemoSeed, password: string): Promise<boolean> {
  const owner = await findUserForSignIn(ctx.db(), seed.ownerEmail);
  if (owner?.password_hash && (await verifyPassword(password, owner.password_hash))) return false;
  await ctx.settings().setPassword(PLATFORM, seed.ownerId, password);
  return true;
}

/** The state an earlier run left; none when there is no file or it is not one of ours. */
async function readState(path: string): Promise<DemoState | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const state = JSON.parse(text) as Partial<DemoState>;
    const fields = [state.key, state.webhook_id, state.webhook_secret];
    return fields.every((field) => typeof field === 'string') ? (state as DemoState) : undefined;
  } catch {
    return undefined; // not JSON (cut short, say): made anew below
  }
}

/** Written whole or not at all (a new file renamed over the old), readable by its owner alone. */
async function writeState(path: string, state: DemoState): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const next = `${path}.${process.pid}.tmp`;
  await writeFile(next, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(next, path);
}
