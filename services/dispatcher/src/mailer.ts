import type { Kysely } from 'kysely';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Database, OwnerNoticeRow } from '@trips/db';
import {
  claimNextNotice,
  markNoticeFailed,
  markNoticeSent,
  releaseNotice,
  type ClaimedNotice,
} from '@trips/db/owner-notices';
import type { Logger } from '@trips/runtime';

export interface MailerOptions {
  /** SMTP_URL; without it e-mails are written to the log (development). */
  smtpUrl: string | undefined;
  from: string;
  /**
   * Longest one e-mail may take, from connecting to the server's answer (default 60 s); then it
   * is abandoned and counts as a failed attempt. A claim lasts twice as long (see LEASE_FACTOR).
   */
  sendTimeoutMs?: number;
}

const DEFAULT_SEND_TIMEOUT_MS = 60_000;
/**
 * A claim lasts this many send timeouts: one for the send, which the abort signal ends on time,
 * and as much again for recording its outcome on a busy pool. It only runs out on its own when a
 * mailer died mid-send; then another mailer sends that e-mail again.
 */
const LEASE_FACTOR = 2;

/**
 * Sends the e-mails owed to owners (owner_notices), oldest first, one at a time. Several
 * dispatchers may run this at once. Each notice is claimed with a lease committed at once
 * (repositories/owner-notices.ts `claimNextNotice`), sent with no database transaction open, then
 * marked sent or failed in one statement that ends the claim. So a hanging mail server holds no
 * transaction, lock or pooled connection, holds back no list sync and no other notice, and costs
 * at most `sendTimeoutMs` per e-mail. No two live mailers send one notice: the lease keeps others
 * off it until the outcome is recorded. A notice is marked sent after the SMTP server accepted
 * it; a crash in between sends it again once the lease has ended, and close() mid-send frees it
 * for another dispatcher at once: the only ways an owner could get a duplicate.
 */
export class Mailer {
  private readonly db: Kysely<Database>;
  private readonly transport: Transporter | undefined;
  private readonly from: string;
  private readonly logger: Logger;
  private readonly sendTimeoutMs: number;
  private readonly leaseMs: number;
  /** Aborted by close(): ends a send in flight and the round it belongs to. */
  private readonly closing = new AbortController();

  constructor(db: Kysely<Database>, options: MailerOptions, logger: Logger) {
    this.db = db;
    this.from = options.from;
    this.logger = logger;
    this.sendTimeoutMs = options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
    this.leaseMs = this.sendTimeoutMs * LEASE_FACTOR;
    // nodemailer's own defaults (2 min to connect, 10 min of silence) are far longer than a claim.
    // These end a dead server's attempt early with nodemailer's own, telling error; they stay at
    // half the send timeout at most, so that the abort signal in deliver() only bounds the whole
    // (a server that answers every step just in time).
    const step = Math.floor(this.sendTimeoutMs / 2);
    this.transport = options.smtpUrl
      ? nodemailer.createTransport({
          url: options.smtpUrl,
          connectionTimeout: Math.min(10_000, step),
          greetingTimeout: Math.min(10_000, step),
          socketTimeout: Math.min(30_000, step),
        })
      : undefined;
  }

  /** Sends up to `limit` notices, each claimed on its own; answers how many were sent. */
  async sendBatch(limit = 20): Promise<number> {
    let sent = 0;
    let afterId = 0;
    for (let i = 0; i < limit && !this.closing.signal.aborted; i++) {
      const claim = await claimNextNotice(this.db, this.leaseMs, afterId);
      if (!claim) break;
      afterId = claim.notice.id;
      if (await this.send(claim)) sent++;
    }
    return sent;
  }

  /** One claimed notice: deliver, then record the outcome, which ends the claim. */
  private async send({ notice, lease }: ClaimedNotice): Promise<boolean> {
    try {
      await this.deliver(notice);
    } catch (error) {
      if (this.closing.signal.aborted) {
        // Stopping: free the notice for another dispatcher at once rather than when the lease
        // ends, and do not count an attempt that the server did not fail.
        this.logger.warn({ noticeId: notice.id }, 'e-mail abandoned by a stop; another dispatcher sends it');
        await releaseNotice(this.db, notice.id, lease);
        return false;
      }
      this.logger.error({ err: error, noticeId: notice.id }, 'e-mail not sent; will retry');
      await markNoticeFailed(this.db, notice.id, lease, (error as Error).message);
      return false;
    }
    await markNoticeSent(this.db, notice.id);
    return true;
  }

  private async deliver(notice: OwnerNoticeRow): Promise<void> {
    if (!this.transport) {
      this.logger.info(
        { to: notice.recipient, subject: notice.subject, body: notice.body },
        'e-mail (SMTP_URL unset, logged instead)',
      );
      return;
    }
    const deadline = AbortSignal.timeout(this.sendTimeoutMs);
    try {
      await this.transport.sendMail({
        from: this.from,
        to: notice.recipient,
        subject: notice.subject,
        text: notice.body,
        signal: AbortSignal.any([deadline, this.closing.signal]),
      });
    } catch (error) {
      if (deadline.aborted) {
        throw new Error(`the mail server took longer than ${this.sendTimeoutMs} ms`, { cause: error });
      }
      throw error;
    }
  }

  /** Ends a send in flight (its notice is freed for another dispatcher) and stops claiming. */
  close(): void {
    this.closing.abort();
    this.transport?.close();
  }
}
