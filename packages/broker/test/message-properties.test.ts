import type { DeliveryMessage } from '@trips/contracts';
import { deliveryMessageProperties, eventMessageProperties } from '../src/index.ts';

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
