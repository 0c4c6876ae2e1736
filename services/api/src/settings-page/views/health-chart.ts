import type { HealthBucket, WebhookHealth } from '@trips/settings';
import { html, type SafeHtml } from '../html.ts';

// A webhook's health drawn on the server as inline SVG (the page's CSP allows no script): one bar
// per period, its height the attempts, the failed part in red at its foot. Each bar has a <title>
// (the browser's tooltip, read by screen readers too), and the numbers stand beside the picture.
// Under the bars, a time axis in HTML: the SVG stretches to its box, which would distort its text.
// The axis has a cell per bar (styles.ts), so each label stands under its own bar.

const BAR = 10;
const GAP = 2;
const HEIGHT = 60;

/** "97.5%" with at most one decimal; "—" without attempts. */
export const percent = (rate: number | null): string =>
  rate === null ? '—' : `${Math.floor(rate * 1000) / 10}%`;

const sum = (buckets: HealthBucket[]) =>
  buckets.reduce((s, b) => ({ attempts: s.attempts + b.attempts, failures: s.failures + b.failures }), {
    attempts: 0,
    failures: 0,
  });

interface Axis {
  /** The label under a bar ('' for none). */
  tick: (b: HealthBucket, i: number) => string;
  /** `hours` labels a bar's start (where the hour begins), `days` the bar itself (centred). */
  kind: 'hours' | 'days';
}

function chart(
  buckets: HealthBucket[],
  label: (b: HealthBucket) => string,
  caption: string,
  axis: Axis,
): SafeHtml {
  const max = Math.max(1, ...buckets.map((b) => b.attempts));
  const width = buckets.length * (BAR + GAP);
  const scale = (n: number) => (n === 0 ? 0 : Math.max(1, Math.round((n / max) * HEIGHT)));
  return html`<svg
      class="health"
      viewBox="0 0 ${width} ${HEIGHT + 1}"
      preserveAspectRatio="none"
      role="img"
      aria-label="${caption}"
    >
      <line
        x1="0"
        y1="${HEIGHT + 0.5}"
        x2="${width}"
        y2="${HEIGHT + 0.5}"
        stroke="#d5ddd8"
        stroke-width="1"
      />
      ${buckets.map((b, i) => {
        // Half a gap on each side: the bar is centred in its share of the width, as its axis cell is.
        const x = i * (BAR + GAP) + GAP / 2;
        const all = scale(b.attempts);
        const failed = scale(b.failures);
        const title = `${label(b)}: ${b.attempts} attempt${b.attempts === 1 ? '' : 's'}, ${b.failures} failed`;
        return html`<g>
          <title>${title}</title>
          <rect x="${x}" y="0" width="${BAR}" height="${HEIGHT}" fill="transparent" />
          <rect x="${x}" y="${HEIGHT - all}" width="${BAR}" height="${all - failed}" fill="#1f6b45" />
          <rect x="${x}" y="${HEIGHT - failed}" width="${BAR}" height="${failed}" fill="#a3261b" />
        </g>`;
      })}
    </svg>
    <div class="axis axis-${axis.kind}" aria-hidden="true">
      ${buckets.map((b, i) => html`<span>${axis.tick(b, i)}</span>`)}
    </div>`;
}

const hourLabel = (b: HealthBucket) => `${b.start.toISOString().slice(0, 13).replace('T', ' ')}:00 UTC`;
const dayLabel = (b: HealthBucket) => b.start.toISOString().slice(0, 10);
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
/** Every sixth hour's start, "06:00"; each day's name, "Mon" (UTC, as the tooltips). */
const HOUR_AXIS: Axis = {
  kind: 'hours',
  tick: (b, i) => (i % 6 === 0 ? `${b.start.toISOString().slice(11, 13)}:00` : ''),
};
const DAY_AXIS: Axis = { kind: 'days', tick: (b) => WEEKDAYS[b.start.getUTCDay()]! };

export function healthSection(health: WebhookHealth): SafeHtml {
  const week = sum(health.days);
  const day = sum(health.hours);
  const weekRate = week.attempts === 0 ? null : (week.attempts - week.failures) / week.attempts;
  return html`<div class="health-grid">
      <figure>
        ${chart(health.hours, hourLabel, 'Deliveries and failures per hour over the last 24 hours', HOUR_AXIS)}
        <figcaption>
          Last 24 hours, per hour: <strong>${percent(health.success_rate_24h)}</strong> delivered
          (${day.attempts - day.failures} of ${day.attempts} attempts; ${day.failures} failed)
        </figcaption>
      </figure>
      <figure>
        ${chart(health.days, dayLabel, 'Deliveries and failures per day over the last 7 days', DAY_AXIS)}
        <figcaption>
          Last 7 days, per day: <strong>${percent(weekRate)}</strong> delivered
          (${week.attempts - week.failures} of ${week.attempts} attempts; ${week.failures} failed)
        </figcaption>
      </figure>
    </div>
    <p class="hint">
      <span class="key key-ok"></span> delivered <span class="key key-failed"></span> failed; times in UTC.
    </p>`;
}
