export { ID_PREFIXES, idPattern, isTestEventId, TEST_EVENT_ID_PREFIX, type IdKind } from './ids.ts';
export { SCOPES, EVENTS_SCOPE, type Scope } from './scopes.ts';
export {
  API_BASE_PATH,
  OBJECTS,
  OBJECT_TYPES,
  objectUrl,
  TRIP_STATUSES,
  PAYMENT_STATUSES,
  type ObjectType,
  type TripStatus,
  type PaymentStatus,
} from './objects.ts';
export {
  EVENT_TYPES,
  EVENT_TYPE_NAMES,
  isEventType,
  isGroupedType,
  scopeForEventType,
  eventTypesOf,
  type EventType,
} from './events.ts';
export { ERROR_CODES, ERROR_CODE_NAMES, type ErrorCode } from './errors.ts';
export type * from './types.ts';
export { SCHEMAS, type JsonSchema } from './schemas.ts';
export {
  compileValidators,
  validate,
  isValid,
  assertValid,
  ContractViolation,
  type SchemaName,
  type SchemaTypes,
  type ValidationError,
} from './validate.ts';
export {
  openapiDocument,
  type OpenApiDocument,
  type Operation,
  type Parameter,
  type PathItem,
  type Response,
  type Header,
  type Ref,
} from './openapi.ts';
export { renderReferencePage } from './reference-page.ts';
export { escapeHtml } from './escape-html.ts';
export {
  MESSAGE_SCHEMAS,
  eventRecord,
  type DeliveryMessage,
  type EventMessage,
  type EventSource,
} from './messages.ts';
export { formatTime, PRODUCT_NAME } from './wording.ts';
export { ICON_PATH, ICON_SVG } from './icon.ts';
