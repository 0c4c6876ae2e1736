import { idPattern } from './ids.ts';
import { OBJECTS, OBJECT_TYPES } from './objects.ts';
import { capitalized, ref } from './openapi-names.ts';
import type { Header, Parameter } from './openapi-types.ts';

// The parameters and headers the operations share, as components.

export const queryParameters: Record<string, Parameter> = {
  UpdatedSince: {
    name: 'updated_since',
    in: 'query',
    description: 'Only objects with `updated_at` at or after this time.',
    schema: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30.123Z'] },
  },
  Limit: {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  },
  Cursor: {
    name: 'cursor',
    in: 'query',
    description: 'The `next_cursor` of the previous page. Empty is the same as absent: the first page.',
    schema: { type: 'string' },
  },
  After: {
    name: 'after',
    in: 'query',
    description:
      'The `next_cursor` of the previous call; only events after it are returned. Empty is the same as absent: reading starts at the oldest kept event.',
    schema: { type: 'string' },
  },
  EventLimit: {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  },
  Types: {
    name: 'types',
    in: 'query',
    description: 'Only events of these types, as a comma-separated list, e.g. `trip.created,trip.deleted`.',
    style: 'form',
    explode: false,
    schema: { type: 'array', items: ref('schemas', 'EventType'), minItems: 1 },
  },
};

export const idParameters: Record<string, Parameter> = Object.fromEntries(
  OBJECT_TYPES.map((type) => [
    `${capitalized(type)}Id`,
    {
      name: 'id',
      in: 'path',
      required: true,
      description: `The id of the ${type}.`,
      schema: { type: 'string', examples: [`${OBJECTS[type].idPrefix}4kXq9ZtR2mB7nW1c`] },
    },
  ]),
);

export const headers: Record<string, Header> = {
  'Request-Id': {
    description: 'Identifies this request; equal to `error.request_id` in an error. Quote it to support.',
    required: true,
    schema: { type: 'string', pattern: idPattern('request') },
  },
  'RateLimit-Limit': {
    description: 'Requests the key may burst (the bucket size).',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left before the key is limited.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the bucket is full again.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'WWW-Authenticate': {
    description:
      'The scheme to authenticate with (RFC 6750): `Bearer realm="api"`, with `error="invalid_token"` when the key sent is malformed, unknown or revoked.',
    required: true,
    schema: { type: 'string', pattern: '^Bearer ' },
  },
  'Retry-After': {
    description: 'Whole seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
};
