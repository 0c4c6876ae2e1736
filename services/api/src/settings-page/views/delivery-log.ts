import type { LogEntry, NextAttempt } from '@trips/settings';
import { html, time, type SafeHtml } from '../html.ts';
import { table, type Column } from './table.ts';

// A webhook's delivery log: every attempt with what happened in words, when a failing delivery is
// tried next (as the dispatcher scheduled it), all or failed only, 50 at a time, each with a link
// to its details.

export interface LogInput {
  attempts: LogEntry[];
  failedOnly: boolean;
  /** The attempt this page starts before, when it is not the newest page. */
  before?: number;
  /** Where the next (older) page starts; null on the last. */
  nextBefore: number | null;
}

function nextCell(next: NextAttempt | null): SafeHtml {
  if (!next) return html`—`;
  if ('none' in next) return html`no more attempts: ${next.none}`;
  return html`attempt ${next.number}, due ${time(next.due_at)}`;
}

export function deliveryLog(webhookId: string, log: LogInput): SafeHtml {
  const base = `/settings/webhooks/${webhookId}`;
  const filterLink = (failed: boolean, label: string) =>
    html`<a
      href="${failed ? `${base}?log=failed` : base}#log"
      ${failed === log.failedOnly ? html` aria-current="page"` : ''}
      >${label}</a
    >`;
  return html`<nav class="filter" aria-label="Which attempts">
      ${filterLink(false, 'All attempts')} ${filterLink(true, 'Failed only')}
    </nav>
    ${
      log.attempts.length === 0
        ? html`<p>${log.failedOnly ? 'No failed attempts.' : 'No deliveries yet.'}</p>`
        : attemptsTable(base, log)
    }
    <p class="pager">
      ${log.before ? html`<a href="${base}${log.failedOnly ? '?log=failed' : ''}#log">← Newest</a>` : ''}
      ${
        log.nextBefore
          ? html`<a href="${base}?${log.failedOnly ? 'log=failed&' : ''}before=${log.nextBefore}#log"
              >Older attempts →</a
            >`
          : ''
      }
    </p>`;
}

/** The log's columns; the result says what happened in words (attempt-words.ts). */
const attemptColumns = (base: string): Column<LogEntry>[] => [
  { heading: 'Time', cell: (a) => time(a.attempted_at) },
  { heading: 'Event', cell: (a) => html`<code>${a.event_type}</code><br /><code>${a.event_id}</code>` },
  { heading: 'Attempt', cell: (a) => a.attempt },
  {
    heading: 'Result',
    cell: (a) =>
      html`${
          a.succeeded
            ? html`<span class="state state-active">Delivered</span>`
            : html`<span class="state state-failing">Failed</span>`
        }
        ${a.succeeded ? html`${a.status_code}` : a.reason} <span class="hint">(${a.duration_ms} ms)</span>`,
  },
  { heading: 'Next attempt', cell: (a) => nextCell(a.next) },
  {
    heading: 'Details',
    unlabelled: true,
    cell: (a) => html`<a href="${base}/attempts/${a.id}" aria-label="Details of attempt ${a.id}">Details</a>`,
  },
];

function attemptsTable(base: string, log: LogInput): SafeHtml {
  return table(attemptColumns(base), log.attempts, {
    className: 'stack',
    caption: html`${log.failedOnly ? 'Failed attempts' : 'Attempts'}, newest
    first${log.before ? ', older page' : ''}.`,
  });
}
