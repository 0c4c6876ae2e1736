// Turns packages/contracts' OpenAPI document into the SDK's resource and event types, so they have
// one source. It knows only the subset of JSON Schema the document uses, and throws on anything
// else rather than guess: a schema it cannot express is a change someone must look at.

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  allOf?: Schema[];
  description?: string;
};

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema: Schema;
  $ref?: string;
}

interface Document {
  paths: Record<string, Record<string, { operationId?: string; parameters?: Parameter[] }>>;
  components: { schemas: Record<string, Schema>; parameters: Record<string, Parameter> };
}

/** The schema `Error` would shadow the global Error class in an agency's code. */
const RENAMED: Record<string, string> = { Error: 'ApiErrorBody' };
const typeName = (ref: string) => {
  const name = ref.replace('#/components/schemas/', '');
  return RENAMED[name] ?? name;
};

const literal = (value: unknown) =>
  typeof value === 'string' ? `'${value.replace(/'/g, "\\'")}'` : JSON.stringify(value);

function doc(description: string | undefined, indent: string): string {
  if (!description) return '';
  const lines = description.split('\n');
  if (lines.length === 1) return `${indent}/** ${description} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join('\n')}\n${indent} */\n`;
}

function tsType(schema: Schema, indent: string, where: string): string {
  if (schema.$ref) return typeName(schema.$ref);
  if ('const' in schema) return literal(schema.const);
  if (schema.enum) return schema.enum.map(literal).join(' | ');
  if (schema.allOf && !schema.type) {
    // A list item narrows an object (`non_golfers` null in lists): the object's own type is the truth.
    const ref = schema.allOf.find((s) => s.$ref);
    if (!ref) throw new Error(`openapi-to-ts: ${where}: allOf without a $ref`);
    return tsType(ref, indent, where);
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types
    .map((type) => {
      switch (type) {
        case 'string':
        case 'boolean':
        case 'null':
          return type;
        case 'integer':
        case 'number':
          return 'number';
        case 'array': {
          const item = tsType(schema.items ?? {}, indent, `${where}[]`);
          return item.includes(' ') ? `(${item})[]` : `${item}[]`;
        }
        case 'object':
          return schema.properties ? objectType(schema, indent, where) : 'Record<string, unknown>';
        default:
          throw new Error(`openapi-to-ts: ${where}: cannot express type ${String(type)}`);
      }
    })
    .join(' | ');
}

function objectType(schema: Schema, indent: string, where: string): string {
  const inner = `${indent}  `;
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(
    ([name, property]) =>
      `${doc(property.description, inner)}${inner}${name}${required.has(name) ? '' : '?'}: ${tsType(property, inner, `${where}.${name}`)};\n`,
  );
  return `{\n${fields.join('')}${indent}}`;
}

function declaration(name: string, schema: Schema): string {
  const type = tsType(schema, '', name);
  const head = doc(schema.description, '');
  return type.startsWith('{\n')
    ? `${head}export interface ${typeName(name)} ${type}\n`
    : `${head}export type ${typeName(name)} = ${type};\n`;
}

/**
 * The Event schema ties each type to the kind of object it concerns and to its data through
 * `allOf` of if/then: read those into two maps, from which src/events.ts builds the union.
 */
function eventMaps(event: Schema, eventTypes: string[]): string {
  const expected = ['object', 'id', 'type', 'created_at', 'related_object', 'data'];
  if ((event.required ?? []).join() !== expected.join())
    throw new Error(
      `openapi-to-ts: Event's fields changed (${event.required?.join()}); update src/events.ts`,
    );
  const objectOf = new Map<string, string>();
  const dataOf = new Map<string, string>();
  for (const rule of event.allOf ?? []) {
    const types = ((rule.if as Schema)?.properties?.type?.enum ?? []) as string[];
    const then = (rule.then as Schema)?.properties ?? {};
    const object = then.related_object?.properties?.type?.const;
    for (const type of types) {
      if (object !== undefined) objectOf.set(type, String(object));
      if (then.data?.$ref) dataOf.set(type, typeName(then.data.$ref));
    }
  }
  const lines = (map: (type: string) => string) => eventTypes.map((t) => `  '${t}': ${map(t)};\n`).join('');
  const missing = eventTypes.filter((type) => !objectOf.has(type));
  if (missing.length > 0) throw new Error(`openapi-to-ts: no related object type for ${missing.join(', ')}`);
  return (
    eventOf(event) +
    `/** The kind of object each event type concerns (\`related_object.type\`). */\n` +
    `export interface EventObjectTypes {\n${lines((t) => literal(objectOf.get(t)))}}\n\n` +
    `/** The \`data\` each event type carries: \`{}\` unless the document gives it fields. */\n` +
    `export interface EventDataTypes {\n${lines((t) => dataOf.get(t) ?? 'EmptyData')}}\n`
  );
}

/**
 * One member per event type, discriminated on `type`, so `event.data.from` type-checks only once
 * `event.type === 'trip.status_changed'` is known.
 */
function eventOf(event: Schema): string {
  const own: Record<string, string> = {
    type: 'T',
    related_object: 'RelatedObject & { type: EventObjectTypes[T] }',
    data: 'EventDataTypes[T]',
  };
  const fields = Object.entries(event.properties ?? {})
    .map(
      ([name, p]) =>
        `${doc(p.description, '  ')}  ${name}: ${own[name] ?? tsType(p, '  ', `Event.${name}`)};\n`,
    )
    .join('');
  return (
    `${doc(event.description, '')}export interface EventOf<T extends EventType> {\n${fields}}\n\n` +
    `/** Any event, or with \`T\` one of those types: a union discriminated on \`type\`. */\n` +
    `export type Event<T extends EventType = EventType> = { [K in T]: EventOf<K> }[T];\n\n`
  );
}

/** The query parameters of each list operation, keyed by path. */
function listQueries(document: Document): string {
  const entries = Object.entries(document.paths)
    .filter(([path, item]) => !path.includes('{') && (item.get?.parameters?.length ?? 0) > 0)
    .map(([path, item]) => {
      const params = item.get!.parameters!.map((p) =>
        p.$ref ? document.components.parameters[p.$ref.replace('#/components/parameters/', '')]! : p,
      );
      const fields = params
        .map(
          (p) =>
            `${doc(p.description, '    ')}    ${p.name}${p.required ? '' : '?'}: ${tsType(p.schema, '    ', `${path}?${p.name}`)};\n`,
        )
        .join('');
      return `  '${path}': {\n${fields}  };\n`;
    });
  return `/** The query parameters of each list operation, by path. */\nexport interface ListQueries {\n${entries.join('')}}\n`;
}

export function generateTypes(document: Document): string {
  const { schemas } = document.components;
  const parts = Object.entries(schemas)
    .filter(([name]) => name !== 'Event')
    .map(([name, schema]) => declaration(name, schema));
  const eventTypes = (schemas.EventType?.enum ?? []) as string[];
  const errorCodes = schemas.Error?.properties?.error?.properties?.code;
  if (!schemas.Event || eventTypes.length === 0 || !errorCodes)
    throw new Error('openapi-to-ts: Event, EventType or Error is missing');
  return [
    '// Generated by scripts/generate-types.ts from packages/contracts/openapi.json: do not edit.\n' +
      '// test/types.test.ts fails when this file and the document disagree; `pnpm --filter @trips/sdk generate`\n' +
      '// writes it again.\n',
    '/** The data of an event type without fields: reading `data.from` on it does not type-check. */\nexport type EmptyData = Record<never, never>;\n',
    ...parts,
    declaration('ErrorCode', { ...errorCodes, description: 'Stable, machine-readable error codes (D1).' }),
    eventMaps(schemas.Event, eventTypes),
    listQueries(document),
  ].join('\n');
}
