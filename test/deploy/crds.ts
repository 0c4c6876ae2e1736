// The operators' custom resources (RabbitmqCluster, CloudNativePG's Cluster and ScheduledBackup, the
// Barman Cloud plugin's ObjectStore) checked against the CRDs vendored in k8s/crds/, as the API
// server checks them on `kubectl apply`: each served version's openAPIV3Schema under Kubernetes'
// structural-schema rules, with unknown fields refused (kubectl's default field validation is
// Strict), and the schema's CEL rules (x-kubernetes-validations) evaluated.
import { readdirSync } from 'node:fs';
import { evaluate } from '@marcbachmann/cel-js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { readText } from './helpers.ts';

type Schema = Record<string, any>;

/** A CEL rule of the schema, with the path of the value it is evaluated on. */
interface Rule {
  path: string[];
  rule: string;
  message?: string;
}

interface Version {
  validate: ValidateFunction;
  rules: Rule[];
}

/**
 * The API server checks `pattern` with Go's RE2, whose leading `(?i)` (ignore case, in the
 * PrometheusRule's) JavaScript writes as a flag. The CRDs here use no other RE2-only syntax.
 */
const re2 = Object.assign(
  (source: string, flags: string) =>
    source.includes('(?i)') ? new RegExp(source.replace('(?i)', ''), `${flags}i`) : new RegExp(source, flags),
  { code: 'RE2 (?i) as a flag' },
);
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, code: { regExp: re2 } });
// The OpenAPI formats Kubernetes' schemas use.
ajv.addFormat('int32', {
  type: 'number',
  validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31,
});
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
ajv.addFormat('byte', /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/);
ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)));

/**
 * A structural schema as JSON Schema: int-or-string becomes a union, an object that neither
 * preserves unknown fields nor is a map takes no other properties, and the x-kubernetes-*
 * annotations go (CEL rules are collected into `rules` with their path).
 */
function toJsonSchema(schema: Schema, path: string[], rules: Rule[]): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'x-kubernetes-validations') {
      for (const v of value) rules.push({ path, rule: v.rule, message: v.message });
    } else if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, s]) => [name, toJsonSchema(s as Schema, [...path, name], rules)]),
      );
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
      out[key] = toJsonSchema(value, [...path, key === 'items' ? '[]' : '*'], rules);
    } else if (!key.startsWith('x-kubernetes-')) out[key] = value;
  }
  if (schema['x-kubernetes-int-or-string']) out.type = ['integer', 'string'];
  if (out.type === 'object' && !schema['x-kubernetes-preserve-unknown-fields'] && !out.additionalProperties) {
    out.additionalProperties = false;
  }
  return out;
}

/** Every served version of every vendored CRD, by `group/version/kind`. */
function loadCrds(): Map<string, Version> {
  const versions = new Map<string, Version>();
  for (const file of readdirSync(`${import.meta.dirname}/../../k8s/crds`).filter((f) =>
    f.endsWith('.yaml'),
  )) {
    const crd = parse(readText(`k8s/crds/${file}`));
    for (const version of crd.spec.versions.filter((v: any) => v.served)) {
      const rules: Rule[] = [];
      const schema = toJsonSchema(version.schema.openAPIV3Schema, [], rules);
      // metadata is the API server's to check, not the CRD's (its schema is only `type: object`).
      schema.properties.metadata = { type: 'object' };
      versions.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, {
        validate: ajv.compile(schema),
        rules,
      });
    }
  }
  return versions;
}

const crds = loadCrds();

/** The API groups k8s/crds/ has schemas for. */
const crdGroups = new Set([...crds.keys()].map((k) => k.split('/')[0]!));

function describeError(e: ErrorObject): string {
  const at = e.instancePath || '/';
  if (e.keyword === 'additionalProperties')
    return `${at} has an unknown field ${e.params.additionalProperty}`;
  if (e.keyword === 'enum') return `${at} ${e.message}: ${e.params.allowedValues.join(', ')}`;
  return `${at} ${e.message}`;
}

/** The values a path reaches in an object (`[]` goes into every item, `*` into every map value). */
function valuesAt(value: any, path: string[]): { at: string; value: any }[] {
  if (path.length === 0) return [{ at: '', value }];
  if (value === null || typeof value !== 'object') return [];
  const [head, ...rest] = path;
  const children: [string, any][] =
    head === '[]' || head === '*' ? Object.entries(value) : head! in value ? [[head!, value[head!]]] : [];
  return children.flatMap(([key, child]) =>
    valuesAt(child, rest).map((v) => ({ at: `/${key}${v.at}`, value: v.value })),
  );
}

/**
 * The CEL rules that fail. Transition rules (they read oldSelf) apply to updates only, so not to a
 * manifest on its own; a rule that cannot be evaluated here is reported, not skipped.
 */
function ruleProblems(object: any, rules: Rule[]): string[] {
  const problems: string[] = [];
  for (const { path, rule, message } of rules) {
    if (/\boldSelf\b/.test(rule)) continue;
    for (const { at, value } of valuesAt(object, path)) {
      let ok: unknown;
      try {
        // Re-created here: cel-js takes only plain objects of its own realm, and a structuredClone
        // (as render() hands out) is made in Node's main realm, not in jest's.
        ok = evaluate(rule, { self: JSON.parse(JSON.stringify(value)) });
      } catch (error) {
        problems.push(`${at || '/'} rule ${rule} could not be evaluated: ${(error as Error).message}`);
        continue;
      }
      if (ok !== true) problems.push(`${at || '/'} ${message ?? `fails ${rule}`}`);
    }
  }
  return problems;
}

/**
 * Problems of a custom resource against its vendored CRD; undefined when k8s/crds/ has nothing for
 * its API group (it is not a custom resource of ours).
 */
export function crdProblems(object: any): string[] | undefined {
  const [group, version] = String(object.apiVersion ?? '').split('/');
  if (!group || !crdGroups.has(group)) return undefined;
  const name = `${object.kind}/${object.metadata?.name}`;
  const crd = crds.get(`${group}/${version}/${object.kind}`);
  if (!crd) return [`${object.apiVersion} ${object.kind}: no served version of this kind in k8s/crds/`];
  const problems = crd.validate(object) ? [] : crd.validate.errors!.map(describeError);
  return [...problems, ...ruleProblems(object, crd.rules)].map((p) => `${name}: ${p}`);
}
