// ---- The failure streak: its rules, stated once ----
//
// A webhook's failure streak is `webhooks.failing_since`. Deliveries move it through one statement,
// the one that records their attempts (`RECORD_ATTEMPTS`, behind recordAttempts in
// packages/db/src/repositories/webhook-attempts.ts), by these rules:
// - A 2xx ends the streak (D7: any 2xx resets it): failing_since and warned_at are cleared, and
//   last_success_at becomes the 2xx's time.
// - A failure starts a streak at its own time, unless one runs already, which then keeps its
//   start. last_failure_at and last_error (the failure class, with "(HTTP n)" when the endpoint
//   answered) come from the latest failure.
// - Attempts recorded together count per webhook in the order given, as if recorded one after
//   another: the last 2xx ends the streak, and the failures after it start a new one from the
//   first of them (with no 2xx among them, they continue the running one).
// - A switched-off webhook's streak stays as it was (its attempts are still logged); switching it
//   back on starts it with no streak.
// - A 2xx that changes nothing else rewrites the row only when last_success_at is unset or over a
//   second older than it, so a busy healthy endpoint does not serialize its deliveries on one row
//   lock. Recorded together, last_success_at becomes the latest 2xx's time whenever the row
//   changes anyway, so it may be up to that second newer than one at a time.
//
// The window, WEBHOOK_FAILURE_WINDOW, is read once into `policy.failureWindowMs` (config.ts) and
// passed from there to everything that measures against it; the SQL has none of its own. The
// switch-off (switch-off.ts) switches a webhook off once its streak is that old, and warns its
// owners once when the streak is `policy.warnAfterMs` old, a third of it. The retries below do not
// read the streak: each delivery measures the same window from its own first failure.

// The schedule itself lives in @trips/broker (retry-schedule.ts), since the settings module reads it
// too, to tell owners when a failing delivery's next attempt is due.
export { nextRetry } from '@trips/broker';
