import { createHmac } from 'node:crypto';
import { signWebhookForTest, verifyWebhook, WebhookVerificationError, type Event } from '../src/index.ts';

// verifyWebhook (issue 25, item 4): every bad input is refused, each for its own reason, and a
// good delivery, also during a secret rotation, is accepted. The signatures are checked against
// testkit's verifySignature, written from D7 separately, so sign and verify cannot share a mistake.

const secret = 'whsec_current0000000000000000000000000000000000';
const older = 'whsec_previous000000000000000000000000000000000';
const event: Event = {
  object: 'event',
  id: 'evt_4kXq9ZtR2mB7nW1c',
  type: 'trip.status_changed',
  created_at: '2026-11-21T10:15:30.123Z',
  related_object: { type: 'trip', id: 'trp_Q3R8t5D7kCLGFtRk', url: '/api/v1/trips/trp_Q3R8t5D7kCLGFtRk' },
  data: { from: 'planning', to: 'confirmed' },
};
const now = Math.floor(Date.now() / 1000);
const hmac = (key: string, t: number, body: string) =>
  createHmac('sha256', key).update(`${t}.${body}`).digest('hex');

function reason(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
  throw new Error('accepted, but it should have been refused');
}

test('a signed delivery is accepted from a string, a Buffer or a Uint8Array, with any kind of headers', () => {
  const { body, headers } = signWebhookForTest(event, secret);
  const t = Number(/^t=(\d+),/.exec(headers['service-signature']!)![1]);
  expect(Math.abs(t - now)).toBeLessThanOrEqual(1);
  expect(headers['service-signature']).toBe(`t=${t},v1=${hmac(secret, t, body)}`);
  expect(body).toBe(JSON.stringify(event));
  expect(headers).toMatchObject({
    'content-type': 'application/json',
    'user-agent': 'TripService-Webhooks/1',
    'service-event-id': event.id,
    'service-event-type': event.type,
  });
  const verified = verifyWebhook(body, headers, secret);
  expect(verified).toEqual(event);
  if (verified.type === 'trip.status_changed') expect(verified.data.to).toBe('confirmed');
  expect(verifyWebhook(Buffer.from(body), headers, secret).id).toBe(event.id);
  expect(verifyWebhook(new TextEncoder().encode(body), headers, secret).id).toBe(event.id);
  expect(verifyWebhook(body, new Headers(headers), secret).id).toBe(event.id);
  expect(verifyWebhook(body, { 'Service-Signature': headers['service-signature'] }, secret).id).toBe(
    event.id,
  );
});

test('an already parsed body is refused, saying why', () => {
  const { body, headers } = signWebhookForTest(event, secret);
  for (const parsed of [JSON.parse(body), null, 42]) {
    expect(reason(() => verifyWebhook(parsed, headers, secret))).toBe('body_not_raw');
  }
  expect(() => verifyWebhook(JSON.parse(body), headers, secret)).toThrow(/raw request body.*express\.raw/s);
});

test('no secret is a setup error, not a bad delivery', () => {
  const { body, headers } = signWebhookForTest(event, secret);
  for (const secrets of [undefined, '', [], [''], [secret, 7]]) {
    expect(() => verifyWebhook(body, headers, secrets as never)).toThrow(TypeError);
  }
  expect(() => verifyWebhook(body, headers, undefined as never)).toThrow(/environment variable/);
});

test('a missing header, and each way of a malformed one, have their own reasons', () => {
  const { body } = signWebhookForTest(event, secret);
  const sig = hmac(secret, now, body);
  expect(reason(() => verifyWebhook(body, {}, secret))).toBe('missing_header');
  expect(reason(() => verifyWebhook(body, { 'service-signature': ' ' }, secret))).toBe('missing_header');
  for (const header of [
    'garbage',
    `v1=${sig}`, // no t
    `t=,v1=${sig}`,
    `t=soon,v1=${sig}`,
    `t=${now},t=${now},v1=${sig}`,
    `t=${now}`, // no v1
    `t=${now},v1=${sig.slice(1)}`, // 63 digits
    `t=${now},v1=${'z'.repeat(64)}`,
    `t=${now},v1=${sig.slice(0, 40)}x${sig.slice(41)}`, // 64 characters, one not hex
    `t=${now},v1=${sig}0`, // 65 digits
  ]) {
    expect({
      header,
      reason: reason(() => verifyWebhook(body, { 'service-signature': header }, secret)),
    }).toEqual({
      header,
      reason: 'malformed_header',
    });
  }
});

test('a time beyond the tolerance either way is refused; at the tolerance it is accepted', () => {
  const at = (t: number, toleranceSeconds?: number) => {
    const { body, headers } = signWebhookForTest(event, secret, { timestamp: t });
    return () => verifyWebhook(body, headers, secret, { now, toleranceSeconds });
  };
  expect(reason(at(now - 301))).toBe('timestamp_too_old');
  expect(reason(at(now + 301))).toBe('timestamp_in_future');
  expect(at(now - 300)().id).toBe(event.id);
  expect(at(now + 300)().id).toBe(event.id);
  expect(reason(at(now - 11, 10))).toBe('timestamp_too_old');
});

test('a wrong secret, a changed body or a signature of another time match nothing', () => {
  const { body, headers } = signWebhookForTest(event, secret);
  expect(reason(() => verifyWebhook(body, headers, older))).toBe('no_matching_signature');
  const changed = body.replace('confirmed', 'cancelled');
  expect(reason(() => verifyWebhook(changed, headers, secret))).toBe('no_matching_signature');
  expect(reason(() => verifyWebhook(`${body} `, headers, secret))).toBe('no_matching_signature');
  const replayed = `t=${now},v1=${hmac(secret, now - 1, body)}`;
  expect(reason(() => verifyWebhook(body, { 'service-signature': replayed }, secret))).toBe(
    'no_matching_signature',
  );
});

test('during a rotation any v1 may match, and several secrets may be given', () => {
  const both = signWebhookForTest(event, [older, secret]);
  expect(both.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  expect(verifyWebhook(both.body, both.headers, secret).id).toBe(event.id);
  expect(verifyWebhook(both.body, both.headers, older).id).toBe(event.id);
  const newOnly = signWebhookForTest(event, secret);
  expect(verifyWebhook(newOnly.body, newOnly.headers, [older, secret]).id).toBe(event.id);
  // A scheme it does not know is ignored, not an error: a later v2 must not break receivers.
  const future = `${newOnly.headers['service-signature']},v2=abc`;
  expect(verifyWebhook(newOnly.body, { 'service-signature': future }, secret).id).toBe(event.id);
});

test('a correctly signed body that is not an event is refused as invalid_body', () => {
  for (const body of ['not json', '{"object":"trip","id":"trp_1"}']) {
    const header = `t=${now},v1=${hmac(secret, now, body)}`;
    expect(reason(() => verifyWebhook(body, { 'service-signature': header }, secret))).toBe('invalid_body');
  }
});
