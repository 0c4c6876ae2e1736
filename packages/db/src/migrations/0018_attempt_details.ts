import { sql, type Kysely } from 'kysely';

// What an owner needs to see why a delivery failed (issue 26), kept small because every attempt
// writes it on the dispatcher's hot path. The body sent is not kept for recorded events: it is
// their event record, rebuilt byte for byte from `events` (contracts' eventRecord). Only an event
// that is in no record (a test event) keeps the body it sent. The other request headers are
// constants or the event's id and type; only the signature, which carries the attempt's own
// time, is kept. The answer's headers are kept as text lines, cut at 1 KiB like its body. A failure
// without an answer keeps Node's error code (e.g. DEPTH_ZERO_SELF_SIGNED_CERT), so the reason can
// be told in words. Added columns without defaults: no table rewrite. Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    ALTER TABLE webhook_attempts
      ADD COLUMN request_signature text CHECK (octet_length(request_signature) <= 2048),
      ADD COLUMN request_body text CHECK (octet_length(request_body) <= 4096),
      ADD COLUMN response_headers text CHECK (octet_length(response_headers) <= 1024),
      ADD COLUMN error_detail text CHECK (octet_length(error_detail) <= 100);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    ALTER TABLE webhook_attempts DROP COLUMN request_signature, DROP COLUMN request_body,
      DROP COLUMN response_headers, DROP COLUMN error_detail`.execute(db);
}
