import type { DeliveryMessage } from '@trips/contracts';
import { capturedAtOf, deliveryMessageProperties, eventMessageProperties } from '../src/index.ts';

test("an event message carries the event's id, type, time and agency, persistent", () => {
  const createdAt = new Date('2026-03-01T10:00:00.750Z');
  expect(
    eventMessageProperties({ id: 'evt_1', type: 'trip.created', agency_id: 'agy_1', created_at: createdAt }),
  ).toEqual({
    persistent: true,
    contentType: 'application/json',
    messageId: 'evt_1',
    type: 'trip.created',
    timestamp: Math.floor(createdAt.getTime() / 1000),
    headers: { agency_id: 'agy_1' },
  });
});

test("a delivery message carries its event's id and type and its webhook, persistent", () => {
  const delivery = {
    webhook_id: 'whk_1',
    agency_id: 'agy_1',
    epoch: 0,
    event: { id: 'evt_1', type: 'trip.created' },
    attempt: 1,
    first_failed_at: null,
  } as unknown as DeliveryMessage;
  expect(deliveryMessageProperties(delivery)).toEqual({
    persistent: true,
    contentType: 'application/json',
    messageId: 'evt_1',
    type: 'trip.created',
    headers: { webhook_id: 'whk_1' },
  });
});

test('the capture time of the event’s change travels as a header, read back as the same instant', () => {
  const capturedAt = new Date('2026-03-01T09:59:58.125Z');
  const event = eventMessageProperties({
    id: 'evt_1',
    type: 'trip.created',
    agency_id: 'agy_1',
    created_at: new Date('2026-03-01T10:00:00.750Z'),
    captured_at: capturedAt,
  });
  expect(event.headers).toEqual({ agency_id: 'agy_1', captured_at: '2026-03-01T09:59:58.125Z' });
  expect(capturedAtOf(event.headers)).toEqual(capturedAt);
  const delivery = { webhook_id: 'whk_1', event: { id: 'evt_1', type: 'trip.created' } } as DeliveryMessage;
  const retry = deliveryMessageProperties(delivery, capturedAtOf(event.headers));
  expect(retry.headers).toEqual({ webhook_id: 'whk_1', captured_at: '2026-03-01T09:59:58.125Z' });
  expect(capturedAtOf(retry.headers)).toEqual(capturedAt);
});

test('a message without a capture time, or with one that is no time, has none: nothing is guessed', () => {
  const event = { id: 'evt_1', type: 'trip.created', agency_id: 'agy_1', created_at: new Date() };
  expect(eventMessageProperties({ ...event, captured_at: null }).headers).toEqual({ agency_id: 'agy_1' });
  expect(capturedAtOf(eventMessageProperties(event).headers)).toBeUndefined();
  expect(capturedAtOf(undefined)).toBeUndefined();
  expect(capturedAtOf({ captured_at: 'yesterday' })).toBeUndefined();
  expect(capturedAtOf({ captured_at: 1_772_000_000_000 })).toBeUndefined();
});
