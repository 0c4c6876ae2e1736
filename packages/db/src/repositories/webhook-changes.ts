import pg from 'pg';

/** Where migration 0016's triggers tell of every change a delivery target read would see. */
const CHANNEL = 'delivery_targets_changed';

/**
 * What changed: a webhook's row or one of its secrets, named with its agency (null when the
 * webhook itself went in the same transaction, whose own change names the agency), or anything
 * at all (a TRUNCATE).
 */
export type DeliveryTargetsChange =
  | {
      agencyId: string | null;
      webhookId: string;
      /** A receiver's pause began or grew (migration 0021): how long it lasts from the commit. */
      pausedForMs?: number;
    }
  | 'all';

/** A payload of 0016's or 0021's triggers; one this code cannot read is taken as 'all', always safe. */
export function parseDeliveryTargetsChange(payload: string | undefined): DeliveryTargetsChange {
  if (payload === undefined || payload === '*') return 'all';
  try {
    const parsed = JSON.parse(payload) as { agency?: unknown; webhook?: unknown; paused_for_ms?: unknown };
    const { agency, webhook, paused_for_ms: pausedForMs } = parsed;
    if (typeof webhook === 'string' && (agency === null || typeof agency === 'string'))
      return {
        agencyId: agency,
        webhookId: webhook,
        ...(typeof pausedForMs === 'number' && { pausedForMs }),
      };
  } catch {
    // Not JSON: below.
  }
  return 'all';
}

export interface DeliveryTargetsListener {
  close(): Promise<void>;
}

/**
 * Listens for changes of delivery targets on a connection of its own: LISTEN belongs to a session,
 * so it cannot be a pool's. Resolves once LISTEN is in effect: every change committed from then on
 * reaches `onChange` once its transaction has committed. `onLost` is called once if the
 * connection ends afterwards (Postgres restarted, the backend was terminated, the network went);
 * from then on nothing is told, so the caller must stop trusting what it learnt this way.
 */
export async function listenForDeliveryTargetChanges(
  connectionString: string,
  handlers: { onChange: (change: DeliveryTargetsChange) => void; onLost: (error?: Error) => void },
  applicationName: string,
): Promise<DeliveryTargetsListener> {
  // Keepalive: a connection whose peer vanished without a word (a failover, a cut network) is
  // found dead and reported lost rather than waited on silently for ever.
  const client = new pg.Client({ connectionString, application_name: applicationName, keepAlive: true });
  let listening = false;
  let closed = false;
  const lose = (error?: Error) => {
    if (!listening || closed) return;
    closed = true;
    void client.end().catch(() => {});
    handlers.onLost(error);
  };
  client.on('error', lose);
  client.on('end', () => lose());
  client.on('notification', ({ channel, payload }) => {
    if (channel === CHANNEL) handlers.onChange(parseDeliveryTargetsChange(payload));
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
  } catch (error) {
    closed = true;
    await client.end().catch(() => {});
    throw error;
  }
  listening = true;
  return {
    close: async () => {
      if (closed) return;
      closed = true;
      await client.end().catch(() => {});
    },
  };
}
