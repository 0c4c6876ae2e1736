import type { NewPayment } from '@trips/db/payments';
import { day, daysAgo } from './demo-dates.ts';

/** A payment of the demo book, on the trip whose key is `trip`. */
export type PaymentSeed = NewPayment & { trip: string };

/** Amounts are minor units. paid_at is set exactly when amount_paid = amount (the schema's rule). */
export function demoPayments(today: Date): PaymentSeed[] {
  return [
    // Still being prepared: invisible to the client, the API and events.
    { trip: 'standrews', description: 'Deposit', amount: 60000, currency: 'GBP', visibility: 'draft' },
    {
      trip: 'costadelsol',
      description: 'Deposit (25%)',
      amount: 120000,
      currency: 'EUR',
      visibility: 'shown',
      amount_paid: 120000,
      paid_at: daysAgo(today, 38),
      created_at: daysAgo(today, 40),
      due_date: day(today, -35),
    },
    {
      trip: 'costadelsol',
      description: 'Balance',
      amount: 360000,
      currency: 'EUR',
      visibility: 'shown',
      due_date: day(today, 14),
    },
    { trip: 'costadelsol', description: 'Gala dinner at Finca Cortesin', amount: 54000, currency: 'EUR' },
    {
      trip: 'kiawah',
      description: 'Full package',
      amount: 1480000,
      currency: 'USD',
      visibility: 'shown',
      amount_paid: 1480000,
      paid_at: daysAgo(today, 20),
      created_at: daysAgo(today, 88),
      due_date: day(today, -14),
    },
    {
      // Shown and partly paid: still open.
      trip: 'kiawah',
      description: 'Caddies and extras',
      amount: 96000,
      currency: 'USD',
      visibility: 'shown',
      amount_paid: 40000,
      due_date: day(today, 3),
    },
    {
      trip: 'pebble',
      description: 'Full package',
      amount: 980000,
      currency: 'USD',
      visibility: 'shown',
      amount_paid: 980000,
      paid_at: daysAgo(today, 70),
      created_at: daysAgo(today, 148),
      due_date: day(today, -60),
    },
    {
      // Shown, then withdrawn when the trip was called off.
      trip: 'bandon',
      description: 'Deposit',
      amount: 320000,
      currency: 'USD',
      visibility: 'shown',
      due_date: day(today, -20),
      cancelled_at: daysAgo(today, 21),
      created_at: daysAgo(today, 49),
    },
  ];
}
