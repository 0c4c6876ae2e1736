import { createRequire } from 'node:module';
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { MESSAGE_SCHEMAS, type DeliveryMessage, type EventMessage } from './messages.ts';
import { SCHEMAS } from './schemas.ts';
import type { Contact, ErrorBody, Event, EventList, List, Payment, Trip } from './types.ts';

/** The schemas one can validate against, with the type a value has once it passed. */
export interface SchemaTypes {
  Trip: Trip;
  Payment: Payment;
  Contact: Contact;
  Event: Event;
  TripList: List<Trip>;
  PaymentList: List<Payment>;
  ContactList: List<Contact>;
  EventList: EventList;
  Error: ErrorBody;
  EventMessage: EventMessage;
  DeliveryMessage: DeliveryMessage;
}

export type SchemaName = keyof SchemaTypes;

export interface ValidationError {
  /** JSON Pointer into the value, `''` for the value itself. */
  path: string;
  message: string;
}

/** Thrown by `assertValid`; the message lists every problem so one test run shows them all. */
export class ContractViolation extends Error {
  readonly schema: SchemaName;
  readonly errors: ValidationError[];
  constructor(schema: SchemaName, errors: ValidationError[], value: unknown) {
    super(
      `value does not match ${schema}:\n${errors.map((e) => `  - ${e.path || '(root)'} ${e.message}`).join('\n')}\n` +
        `value: ${preview(value)}`,
    );
    this.name = 'ContractViolation';
    this.schema = schema;
    this.errors = errors;
  }
}

// The schemas sit in the document under the same pointer as in OpenAPI, so their
// `#/components/schemas/…` refs resolve here exactly as they do in openapi.json.
const BUNDLE_ID = 'https://contracts.trips.invalid/schemas';

const PUBLIC_SCHEMAS = [
  'Trip',
  'Payment',
  'Contact',
  'Event',
  'TripList',
  'PaymentList',
  'ContactList',
  'EventList',
  'Error',
] as const;

let compiled: Record<SchemaName, ValidateFunction> | undefined;

/**
 * Every schema, compiled all at once on the first validation in the process (or at a service's
 * start, by compileValidators), so a broken schema fails then, and in this package's tests, even
 * if it is not the one being validated.
 *
 * Not on import: most importers of this package (the API above all) only need its types and
 * constants, and ajv with every validator compiled stayed on their heap for good, a sizeable part
 * of the API's. ajv itself is required here for the same reason.
 */
function validators(): Record<SchemaName, ValidateFunction> {
  if (compiled) return compiled;
  const require = createRequire(import.meta.url);
  const Ajv = (require('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020 }).Ajv2020;
  const addFormats = require('ajv-formats') as (ajv: Ajv2020) => Ajv2020;
  // Strict, so a misspelt keyword or required name fails instead of silently allowing anything;
  // but not strictTypes, which would make every if/then branch repeat the type the main schema
  // states.
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  ajv.addKeyword('components');
  ajv.addKeyword('messages');
  // The broker messages sit beside the public schemas (they embed the Event) but outside
  // `components`, so they never appear in openapi.json.
  ajv.addSchema({ $id: BUNDLE_ID, components: { schemas: SCHEMAS }, messages: MESSAGE_SCHEMAS });
  compiled = Object.fromEntries([
    ...PUBLIC_SCHEMAS.map((name) => [name, ajv.getSchema(`${BUNDLE_ID}#/components/schemas/${name}`)!]),
    ...Object.keys(MESSAGE_SCHEMAS).map((name) => [name, ajv.getSchema(`${BUNDLE_ID}#/messages/${name}`)!]),
  ]) as Record<SchemaName, ValidateFunction>;
  return compiled;
}

/**
 * Compiles every schema now instead of on the first validation, which takes a while: for a service
 * that validates on its hot path (the dispatcher, each broker message), so its first message does not wait for it and a
 * broken schema stops the service at start.
 */
export function compileValidators(): void {
  validators();
}

/** Every way `value` breaks the schema; an empty array when it conforms. */
export function validate(schema: SchemaName, value: unknown): ValidationError[] {
  const check = validators()[schema];
  if (!check) throw new Error(`unknown schema '${String(schema)}'`);
  if (check(value)) return [];
  return (
    (check.errors ?? [])
      // "must match then schema" only repeats the error found inside the branch.
      .filter((error) => error.keyword !== 'if')
      .map((error) => ({ path: error.instancePath, message: describe(error) }))
  );
}

export function isValid<N extends SchemaName>(schema: N, value: unknown): value is SchemaTypes[N] {
  return validate(schema, value).length === 0;
}

/** Throws a `ContractViolation` naming every problem unless `value` conforms. */
export function assertValid<N extends SchemaName>(
  schema: N,
  value: unknown,
): asserts value is SchemaTypes[N] {
  const errors = validate(schema, value);
  if (errors.length > 0) throw new ContractViolation(schema, errors, value);
}

// ajv's messages leave out the one detail a reader needs for these keywords.
function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `has unexpected property '${String(params.additionalProperty)}'`;
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    default:
      return error.message ?? error.keyword;
  }
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
