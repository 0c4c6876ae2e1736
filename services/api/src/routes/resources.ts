import type { IRouter } from 'express';
import type { Kysely } from 'kysely';
import type { Scope } from '@trips/contracts';
import type { Database } from '@trips/db';
import type { SyncPage, SyncQuery } from '@trips/db/sync';
import { guard } from '../auth/scopes.ts';
import { callerOf } from '../auth/authenticate.ts';
import { ApiError } from '../errors.ts';
import { encodeListCursor, readLimit, readListCursor, readQuery, readUpdatedSince } from '../http/params.ts';
import { sendJson } from '../http/send-json.ts';

/** A read-only resource: retrieve by id, and list for `updated_since` sync (D4). */
export interface ResourceSpec<Row, ListRow> {
  path: `/${string}`;
  noun: 'trip' | 'payment' | 'contact';
  scope: Scope;
  find(db: Kysely<Database>, agencyId: string, id: string): Promise<Row | undefined>;
  list(db: Kysely<Database>, agencyId: string, query: SyncQuery): Promise<SyncPage<ListRow>>;
  present(row: Row): object;
  presentInList(row: ListRow): object;
}

const LIST_PARAMS = ['updated_since', 'limit', 'cursor'] as const;

/**
 * Adds the resource's two routes to `router` (the API's own: see app.ts for why not a Router), and
 * returns their paths.
 */
export function addResourceRoutes<Row, ListRow>(
  router: IRouter,
  db: Kysely<Database>,
  spec: ResourceSpec<Row, ListRow>,
): string[] {
  const itemPath = `${spec.path}/:id`;
  router.get(itemPath, ...guard(spec.scope), async (req, res) => {
    readQuery(req, []);
    const id = String(req.params.id);
    // Another agency's object and a missing one get the very same answer (D1). An id holding a
    // control character was refused by the guard before.
    const row = await spec.find(db, callerOf(req).agencyId, id);
    if (!row) throw new ApiError('not_found', `No ${spec.noun} '${id.slice(0, 100)}' in this agency.`);
    sendJson(res, spec.present(row));
  });

  router.get(spec.path, ...guard(spec.scope), async (req, res) => {
    const query = readQuery(req, LIST_PARAMS);
    const limit = readLimit(query.limit, { max: 200, fallback: 50 });
    const updatedSince = readUpdatedSince(query.updated_since);
    const after = readListCursor(query.cursor);
    const page = await spec.list(db, callerOf(req).agencyId, { updatedSince, after, limit });
    sendJson(res, {
      object: 'list',
      data: page.rows.map((row) => spec.presentInList(row)),
      next_cursor: page.next ? encodeListCursor(page.next) : null,
      has_more: page.next !== null,
    });
  });
  return [spec.path, itemPath];
}
