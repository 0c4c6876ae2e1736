import { ID_PREFIXES } from './ids.ts';
import { API_BASE_PATH, OBJECTS } from './objects.ts';
import { headers, idParameters, queryParameters } from './openapi-components.ts';
import { paths } from './openapi-paths.ts';
import { errorResponseComponents } from './openapi-responses.ts';
import type { OpenApiDocument } from './openapi-types.ts';
import { webhooks } from './openapi-webhooks.ts';
import { SCHEMAS } from './schemas.ts';
import { SCOPES } from './scopes.ts';
import { PRODUCT_NAME } from './wording.ts';

export type {
  Header,
  OpenApiDocument,
  Operation,
  Parameter,
  PathItem,
  Ref,
  Response,
} from './openapi-types.ts';

// The OpenAPI 3.1 document, built from the same tables and schemas as everything else rather than
// written by hand, so it cannot promise an endpoint, scope or error code the code does not know.
// scripts/write-openapi.ts writes it to openapi.json; a test keeps the file equal to this object.
// Its parts are built beside it: paths, webhooks, components and responses, each in an
// openapi-*.ts module of its own.

const description = `Read the trips, payments and contacts of one agency, and follow every change to them as events, read with \`GET /events\` or received as signed webhooks.

Authenticate every call with \`Authorization: Bearer <API_KEY>\`. A key belongs to one agency, sees only that agency's objects, and carries scopes: ${SCOPES.map((scope) => `\`${scope}\``).join(', ')}.

Every error is JSON, \`{"error": {"code", "message", "request_id", "param"?}}\`, with a stable \`code\`. Checks run in this order and the first that fails answers: 401 \`unauthorized\`, 403 \`api_not_enabled\`, 403 \`subscription_inactive\`, 403 \`insufficient_scope\`, 429 \`rate_limited\`, 400 \`invalid_request\`, 404 \`not_found\`. Unknown paths under ${API_BASE_PATH} answer 404 \`not_found\`, and a known path with another method 405 \`method_not_allowed\`.

Every response carries \`Request-Id\`. Limits are per key, a token bucket reported in \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; a 429 adds \`Retry-After\`.

Ids are opaque strings with a type prefix (${Object.values(OBJECTS)
  .map(({ idPrefix }) => `\`${idPrefix}\``)
  .join(
    ', ',
  )}, \`${ID_PREFIXES.event}\`). Timestamps are ISO 8601 UTC with milliseconds; dates are \`YYYY-MM-DD\`.`;

export const openapiDocument: OpenApiDocument = {
  openapi: '3.1.0',
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  info: {
    title: `${PRODUCT_NAME} API`,
    version: '1',
    summary: 'Trips, payments, contacts and their events, for an agency’s own software.',
    description,
  },
  // Relative: the document is served by the API itself, so its own host is the server.
  servers: [{ url: '/', description: 'The host serving this document.' }],
  tags: [
    { name: 'Trips', description: 'The trips an agency plans for its clients.' },
    { name: 'Payments', description: 'Payments shown to clients.' },
    { name: 'Contacts', description: 'The people trips are planned for.' },
    { name: 'Events', description: 'Every change to trips, payments and contacts, kept for 30 days.' },
    { name: 'Webhooks', description: 'Events delivered to an HTTPS endpoint an owner registered.' },
    { name: 'Meta', description: 'About the API itself.' },
  ],
  security: [{ bearerAuth: [] }],
  paths,
  webhooks,
  components: {
    schemas: SCHEMAS,
    parameters: { ...idParameters, ...queryParameters },
    headers,
    responses: errorResponseComponents(),
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description:
          'An API key of the agency, `tps_…`, created by an owner in the API settings. Send one `Authorization` header: a request with two answers 400 `invalid_request` (`param` `Authorization`) before any other check.',
      },
    },
  },
};
