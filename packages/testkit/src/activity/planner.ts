import type { ObjectRef } from './changes.ts';
import type { ActivityContext } from './context.ts';
import { contactChange, contactChanges, contactDeletion, newContact } from './contacts.ts';
import { visible } from './model.ts';
import { draftPaymentChange, newPayment, paymentChange, paymentChanges, paymentRemoval } from './payments.ts';
import { newTemplate, templateConversion, templateEdit, tripToTemplate } from './templates.ts';
import { tripEdits, tripEditing } from './trip-edits.ts';
import { newTrip, tripAcceptance, tripDeletion, tripPublishing, tripStatusChange } from './trips.ts';
import type { Choice, Outcome, Write } from './writes.ts';

/** What the planner does next, and what they learn from each committed change. */
export interface Planner {
  /** The next change: another edit of what was just edited, or a weighted pick among all kinds. */
  pick(): Write;
  /** Notes a committed change: the event types seen, and the object the planner keeps working on. */
  committed(outcome: Outcome): void;
}

/**
 * Every kind of change, in this order: the weighted pick walks the list, so a seeded run repeats
 * only while the order stays as it is.
 */
const allChoices = (ctx: ActivityContext): Choice[] => [
  // ---- Trips and templates ----
  newTrip(ctx),
  newTemplate(ctx),
  templateEdit(ctx),
  templateConversion(ctx),
  tripToTemplate(ctx),
  tripStatusChange(ctx),
  tripAcceptance(ctx),
  tripPublishing(ctx),
  tripEditing(ctx),
  tripDeletion(ctx),
  // ---- Payments ----
  newPayment(ctx),
  draftPaymentChange(ctx),
  paymentChange(ctx),
  paymentRemoval(ctx),
  // ---- Contacts ----
  newContact(ctx),
  contactChange(ctx),
  contactDeletion(ctx),
];

export function createPlanner(ctx: ActivityContext, focusChance: number): Planner {
  const { random, chance, choose, int, trips, payments, contacts } = ctx;
  const choices = allChoices(ctx);
  const made = new Set<string>();
  let focus: { ref: ObjectRef; left: number } | undefined;

  /** Another edit of the object the last edit touched, if it still takes one. */
  function focused(): Write | undefined {
    if (!focus || focus.left <= 0 || !chance(focusChance)) return undefined;
    focus.left--;
    const { type, id } = focus.ref;
    if (type === 'trip') {
      const trip = trips.get(id);
      return trip && !trip.template
        ? choose(tripEdits(ctx, trip).filter((w) => w.action !== 'option.remove'))
        : undefined;
    }
    if (type === 'payment') {
      const payment = payments.get(id);
      return payment && visible(payment)
        ? choose(paymentChanges(ctx, payment).filter((w) => w.action !== 'payment.pay'))
        : undefined;
    }
    const contact = contacts.get(id);
    return contact && choose(contactChanges(ctx, contact));
  }

  function pick(): Write {
    const focusedWrite = focused();
    if (focusedWrite) return focusedWrite;
    // Kinds that can make an event type not made yet weigh more, so every type shows up early.
    const weighted = choices.map((c) => ({
      c,
      w: c.weight * (c.makes.some((type) => !made.has(type)) ? 4 : 1),
    }));
    for (let tries = 0; tries < 50; tries++) {
      let r = random() * weighted.reduce((sum, x) => sum + x.w, 0);
      const choice = weighted.find((x) => (r -= x.w) < 0) ?? weighted.at(-1)!;
      const write = choice.c.pick();
      if (write) return write;
    }
    throw new Error('activity: no change fits the agency (a bug in the model)');
  }

  function committed(outcome: Outcome): void {
    for (const e of outcome.events) made.add(e.type);
    for (const t of outcome.touched) made.add(`${t.type}.updated`);
    // Edits come in runs: the planner keeps working on what they just changed.
    const edited = outcome.touched[0];
    if (edited && !outcome.events.length && (!focus || focus.ref.id !== edited.id)) {
      focus = { ref: edited, left: chance(0.15) ? int(15, 30) : int(1, 6) };
    }
  }

  return { pick, committed };
}
