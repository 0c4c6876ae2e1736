import { sql } from 'kysely';
import type { ActivityContext } from './context.ts';
import { visible, type Payment } from './model.ts';
import { event, none, one, ref, touching, type Choice, type Edit, type Write } from './writes.ts';

// Payments: a draft the client does not see makes no event; one the client sees is created,
// updated, paid and deleted in their eyes.

const CURRENCIES = ['EUR', 'GBP', 'USD'];

export function newPayment({
  agencyId,
  chance,
  choose,
  int,
  date,
  liveTrips,
  paymentsOf,
  payments,
}: ActivityContext): Choice {
  return {
    makes: ['payment.created'],
    weight: 2,
    pick: () => {
      const trip = choose(
        liveTrips().filter((t) => !['completed', 'declined', 'cancelled'].includes(t.status)),
      );
      if (!trip || paymentsOf(trip.id).length >= 4) return undefined;
      const shown = chance(0.5);
      return {
        action: shown ? 'payment.create' : 'payment.draft',
        run: async (trx) => {
          const amount = int(10, 400) * 1000;
          const { id } = await one(
            trx,
            sql<{
              id: string;
            }>`INSERT INTO payments (agency_id, trip_id, description, amount, currency, due_date, visibility)
                VALUES (${agencyId}, ${trip.id}, ${choose(['Deposit', 'Balance', 'Green fees', 'Hotel'])!},
                        ${amount}, ${choose(CURRENCIES)!}, ${date(int(5, 90))}, ${shown ? 'shown' : 'draft'})
                RETURNING id`,
          );
          const apply = () =>
            payments.set(id, { id, tripId: trip.id, shown, cancelled: false, amount, paid: 0 });
          return shown
            ? { events: [event('payment.created', id)], touched: [], deleted: [], apply }
            : none(apply);
        },
      };
    },
  };
}

export function draftPaymentChange({ chance, choose, payments }: ActivityContext): Choice {
  return {
    makes: ['payment.created'],
    weight: 1.5,
    pick: () => {
      const payment = choose([...payments.values()].filter((p) => !p.shown && !p.cancelled));
      if (!payment) return undefined;
      if (chance(0.3)) {
        return {
          action: 'payment.edit_draft',
          run: async (trx) => {
            await sql`UPDATE payments SET amount = amount + 1000 WHERE id = ${payment.id}`.execute(trx);
            return none(() => (payment.amount += 1000));
          },
        };
      }
      return {
        action: 'payment.show',
        run: async (trx) => {
          await sql`UPDATE payments SET visibility = 'shown' WHERE id = ${payment.id}`.execute(trx);
          return {
            events: [event('payment.created', payment.id)],
            touched: [],
            deleted: [],
            apply: () => (payment.shown = true),
          };
        },
      };
    },
  };
}

export function paymentChange(ctx: ActivityContext): Choice {
  const { choose, payments } = ctx;
  return {
    makes: ['payment.updated', 'payment.paid'],
    weight: 3,
    pick: () => {
      const payment = choose([...payments.values()].filter(visible));
      return payment && choose(paymentChanges(ctx, payment));
    },
  };
}

export function paymentRemoval({ chance, choose, payments }: ActivityContext): Choice {
  return {
    makes: ['payment.deleted'],
    weight: 1,
    pick: () => {
      const payment = choose([...payments.values()].filter((p) => !visible(p) || chance(0.3)));
      if (!payment) return undefined;
      const wasVisible = visible(payment);
      const how = wasVisible
        ? choose(['cancel', 'delete', ...(payment.paid < payment.amount ? ['unshow'] : [])])!
        : 'delete';
      return {
        action: `payment.${how}`,
        run: async (trx) => {
          if (how === 'cancel')
            await sql`UPDATE payments SET cancelled_at = now() WHERE id = ${payment.id}`.execute(trx);
          else if (how === 'unshow')
            await sql`UPDATE payments SET visibility = 'draft' WHERE id = ${payment.id}`.execute(trx);
          else await sql`DELETE FROM payments WHERE id = ${payment.id}`.execute(trx);
          const apply = () => {
            if (how === 'cancel') payment.cancelled = true;
            else if (how === 'unshow') payment.shown = false;
            else payments.delete(payment.id);
          };
          return wasVisible
            ? {
                events: [event('payment.deleted', payment.id)],
                touched: [],
                deleted: [ref('payment', payment.id)],
                apply,
              }
            : none(apply);
        },
      };
    },
  };
}

/** Changes of a payment the client sees. */
export function paymentChanges({ chance, next }: ActivityContext, payment: Payment): Write[] {
  const touch = (action: string, run: Edit): Write => touching('payment', payment.id, action, run);
  if (payment.paid === payment.amount) {
    // Paid in full: a refund reopens it (payment.updated), as does re-dating the payment.
    return [
      touch('payment.refund', async (trx) => {
        const paid = Math.floor(payment.amount / 2);
        await sql`UPDATE payments SET amount_paid = ${paid}, paid_at = null WHERE id = ${payment.id}`.execute(
          trx,
        );
        return () => (payment.paid = paid);
      }),
    ];
  }
  const writes: Write[] = [
    touch('payment.edit', async (trx) => {
      await (
        chance(0.5)
          ? sql`UPDATE payments SET due_date = due_date + 7 WHERE id = ${payment.id}`
          : sql`UPDATE payments SET description = ${`Deposit, revised ${next()}`} WHERE id = ${payment.id}`
      ).execute(trx);
      return () => {};
    }),
    touch('payment.amount', async (trx) => {
      await sql`UPDATE payments SET amount = amount + 2500 WHERE id = ${payment.id}`.execute(trx);
      return () => (payment.amount += 2500);
    }),
    {
      action: 'payment.pay',
      run: async (trx) => {
        await sql`UPDATE payments SET amount_paid = amount, paid_at = now() WHERE id = ${payment.id}`.execute(
          trx,
        );
        return {
          events: [event('payment.paid', payment.id)],
          touched: [],
          deleted: [],
          apply: () => (payment.paid = payment.amount),
        };
      },
    },
  ];
  // A part payment that leaves something to pay: the final one is payment.pay.
  if (payment.amount - payment.paid >= 3) {
    writes.push(
      touch('payment.part', async (trx) => {
        const paid = payment.paid + Math.floor((payment.amount - payment.paid) / 3);
        await sql`UPDATE payments SET amount_paid = ${paid} WHERE id = ${payment.id}`.execute(trx);
        return () => (payment.paid = paid);
      }),
    );
  }
  return writes;
}
