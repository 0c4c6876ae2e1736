import { API_BASE_PATH, OBJECTS, OBJECT_TYPES, type ObjectType } from './objects.ts';
import { capitalized, ref } from './openapi-names.ts';
import {
  DOCUMENT_ERRORS,
  EVENTS_ERRORS,
  LIST_ERRORS,
  ok,
  responses,
  RETRIEVE_ERRORS,
} from './openapi-responses.ts';
import type { PathItem } from './openapi-types.ts';
import { EVENTS_SCOPE, type Scope } from './scopes.ts';

// The document's paths: each object type's retrieve and list, the events, and the document itself.

const needs = (scope: Scope) => [{ bearerAuth: [scope] }];

/** What a developer must know about one object type beyond its schema. */
const OBJECT_NOTES: Record<ObjectType, string> = {
  trip: 'Templates are not trips: they are never returned. `travelers.non_golfers` is a number when the trip has an itinerary, otherwise null.',
  payment: 'Only payments shown to the client exist here: drafts and cancelled payments answer 404.',
  contact: '`trip_ids` lists the trips the contact takes part in.',
};

function objectPaths(type: ObjectType): Record<string, PathItem> {
  const { collection, scope } = OBJECTS[type];
  const name = capitalized(type);
  const tag = capitalized(collection);
  return {
    [`${API_BASE_PATH}/${collection}/{id}`]: {
      get: {
        operationId: `retrieve${name}`,
        summary: `Retrieve a ${type}`,
        description: `Returns the ${type} with this id. An id of another agency answers 404, exactly like an id that does not exist. ${OBJECT_NOTES[type]} Requires the scope \`${scope}\`.`,
        tags: [tag],
        security: needs(scope),
        parameters: [ref('parameters', `${name}Id`)],
        responses: responses(ok(`The ${type}.`, ref('schemas', name)), RETRIEVE_ERRORS),
      },
    },
    [`${API_BASE_PATH}/${collection}`]: {
      get: {
        operationId: `list${tag}`,
        summary: `List ${collection}`,
        description:
          `Returns the ${collection} of the agency with \`updated_at\` at or after \`updated_since\`, ordered by \`(updated_at, id)\` ascending. ` +
          `To stay in sync, keep the \`updated_at\` of the last ${type} you saw and pass it as \`updated_since\` next time; within one listing follow \`next_cursor\` with \`cursor\`. ` +
          `${OBJECT_NOTES[type]}${type === 'trip' ? ' In lists `travelers.non_golfers` is always null: retrieve the trip for it.' : ''} Requires the scope \`${scope}\`.`,
        tags: [tag],
        security: needs(scope),
        parameters: [
          ref('parameters', 'UpdatedSince'),
          ref('parameters', 'Limit'),
          ref('parameters', 'Cursor'),
        ],
        responses: responses(ok(`A page of ${collection}.`, ref('schemas', `${name}List`)), LIST_ERRORS),
      },
    },
  };
}

const eventsPath: Record<string, PathItem> = {
  [`${API_BASE_PATH}/events`]: {
    get: {
      operationId: 'listEvents',
      summary: 'List events',
      description:
        'Returns the events after the cursor `after`, oldest first; without `after`, reading starts at the oldest kept event (events are kept 30 days). ' +
        '`next_cursor` is never null: store it and pass it as `after` next time, even when the page is empty. A cursor never skips an event, even while events are being recorded. ' +
        'Only events whose object the key may read are returned: `trip.*` needs `trips:read`, `payment.*` `payments:read`, `contact.*` `contacts:read`. ' +
        `Requires the scope \`${EVENTS_SCOPE}\`. A cursor older than the kept window answers 410 \`cursor_expired\`: resync with the lists' \`updated_since\`.`,
      tags: ['Events'],
      security: needs(EVENTS_SCOPE),
      parameters: [ref('parameters', 'After'), ref('parameters', 'EventLimit'), ref('parameters', 'Types')],
      responses: responses(ok('A page of events.', ref('schemas', 'EventList')), EVENTS_ERRORS),
    },
  },
};

const documentPath: Record<string, PathItem> = {
  [`${API_BASE_PATH}/openapi.json`]: {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'Get this OpenAPI document',
      description: 'Returns this document. It needs no key.',
      tags: ['Meta'],
      security: [],
      responses: responses(
        {
          description: 'The OpenAPI 3.1 document of this API.',
          headers: { 'Request-Id': ref('headers', 'Request-Id') },
          content: { 'application/json': { schema: { type: 'object' } } },
        },
        DOCUMENT_ERRORS,
      ),
    },
  },
};

export const paths: Record<string, PathItem> = Object.assign(
  {},
  ...OBJECT_TYPES.map(objectPaths),
  eventsPath,
  documentPath,
);
