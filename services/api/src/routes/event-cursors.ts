import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** A place in the event record: every event up to `seq` has been read; handed out at `at` (ms). */
export interface Position {
  seq: number;
  at: number;
}

const VERSION = 2; // 1 was base64url JSON, readable by anyone
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BODY_BYTES = 16; // seq and at, 8 bytes each
const SEALED_BYTES = 1 + IV_BYTES + BODY_BYTES + TAG_BYTES;

/**
 * Seals positions into `after` cursors and opens them again: AES-256-GCM under the platform's
 * cursor key (migration 0013, the same for every API replica), with the agency's id as
 * associated data.
 *
 * seq is one sequence for all agencies, so a cursor anyone could read would tell an agency how
 * many events the whole platform makes. Sealed, a cursor says nothing, cannot be made up (a
 * forged time would dodge 410 `cursor_expired`), and one agency's does not open for another.
 */
export class EventCursors {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the event cursor key must be 32 bytes');
    this.key = key;
  }

  seal(agencyId: string, position: Position): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(agencyId, 'utf8'));
    const body = Buffer.alloc(BODY_BYTES);
    body.writeBigUInt64BE(BigInt(position.seq), 0);
    body.writeBigUInt64BE(BigInt(position.at), 8);
    return Buffer.concat([
      Buffer.of(VERSION),
      iv,
      cipher.update(body),
      cipher.final(),
      cipher.getAuthTag(),
    ]).toString('base64url');
  }

  /**
   * Whether `cursor` is one of the readable cursors handed out before they were sealed: base64url
   * of `{"v":1,"s":<seq>,"t":<ms>}`. Those can no longer be trusted (anyone could write one), but
   * their holders did nothing wrong: they get 410 and resync, as after any lost position.
   */
  static isUnsealed(cursor: string): boolean {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return false;
    try {
      const { v, s, t } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      const natural = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
      return v === 1 && natural(s) && natural(t);
    } catch {
      return false;
    }
  }

  /** The position sealed in `cursor` for this agency; undefined for anything else. */
  open(agencyId: string, cursor: string): Position | undefined {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
    const bytes = Buffer.from(cursor, 'base64url');
    if (bytes.length !== SEALED_BYTES || bytes[0] !== VERSION) return undefined;
    const iv = bytes.subarray(1, 1 + IV_BYTES);
    const sealed = bytes.subarray(1 + IV_BYTES, 1 + IV_BYTES + BODY_BYTES);
    const tag = bytes.subarray(1 + IV_BYTES + BODY_BYTES);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(agencyId, 'utf8'));
      decipher.setAuthTag(tag);
      const body = Buffer.concat([decipher.update(sealed), decipher.final()]);
      const seq = body.readBigUInt64BE(0);
      const at = body.readBigUInt64BE(8);
      if (seq > BigInt(Number.MAX_SAFE_INTEGER) || at > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
      return { seq: Number(seq), at: Number(at) };
    } catch {
      return undefined; // not sealed by us, for this agency: tampered, another agency's, made up
    }
  }
}
