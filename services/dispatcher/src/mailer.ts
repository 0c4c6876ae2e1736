import type { Kysely } from 'kysely';
import nodemailer, { type Transporter } from 'nodemailer';
import { claimUnsentNotices, markNoticeFailed, markNoticeSent, type Database } from '@trips/db';
import type { Logger } from '@trips/runtime';

export interface MailerOptions {
  /** SMTP_URL; without it e-mails are written to the log (development). */
  smtpUrl: string | undefined;
  from: string;
}

/**
 * Sends the e-mails owed to owners (owner_notices), oldest first. Several dispatchers may run this at
 * once: each claims rows with SKIP LOCKED. A row is marked sent after the SMTP server accepted it;
 * a crash in between sends it again, the only way an owner could get a duplicate.
 */
export class Mailer {
  private readonly db: Kysely<Database>;
  private readonly transport: Transporter | undefined;
  private readonly from: string;
  private readonly logger: Logger;

  constructor(db: Kysely<Database>, options: MailerOptions, logger: Logger) {
    this.db = db;
    this.from = options.from;
    this.logger = logger;
    this.transport = options.smtpUrl ? nodemailer.createTransport(options.smtpUrl) : undefined;
  }

  /** Sends one batch; answers how many were sent. */
  async sendBatch(limit = 20): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const notices = await claimUnsentNotices(trx, limit);
      let sent = 0;
      for (const notice of notices) {
        try {
          if (this.transport) {
            await this.transport.sendMail({
              from: this.from,
              to: notice.recipient,
              subject: notice.subject,
              text: notice.body,
            });
          } else {
            this.logger.info(
              { to: notice.recipient, subject: notice.subject, body: notice.body },
              'e-mail (SMTP_URL unset, logged instead)',
            );
          }
          await markNoticeSent(trx, notice.id);
          sent++;
        } catch (error) {
          this.logger.error({ err: error, noticeId: notice.id }, 'e-mail not sent; will retry');
          await markNoticeFailed(trx, notice.id, (error as Error).message);
        }
      }
      return sent;
    });
  }

  close(): void {
    this.transport?.close();
  }
}
