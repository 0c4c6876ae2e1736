// The public surface of @trips/sdk. Everything an agency's code may use is exported here.
export { TripService } from './client.ts';
export type { ClientOptions, RequestOptions } from './http.ts';
export type { EventListParams, ObjectListParams, RelatedObjects } from './resources.ts';
export { PagedList, type Page } from './pagination.ts';
export {
  TripServiceError,
  WebhookVerificationError,
  type ClientErrorCode,
  type WebhookVerificationReason,
} from './errors.ts';
export type { ConsumeOptions, CursorExpired } from './consumer.ts';
export { fileCursorStore, type CursorStore } from './cursor-store.ts';
export { memoryDedupe, type DedupeStore } from './dedupe.ts';
export {
  createEventStream,
  type EventSource,
  type EventStream,
  type EventStreamOptions,
} from './event-stream.ts';
export { verifyWebhook, type VerifyOptions } from './webhooks/verify.ts';
export { generateTestSigningKey, signWebhookForTest, type SignedDelivery } from './webhooks/sign.ts';
export { createWebhookHandler, type WebhookHandlerOptions } from './webhooks/handler.ts';
export type { HeadersLike } from './webhooks/headers.ts';
export type * from './openapi-types.ts';
export { VERSION } from './version.ts';
