// The checks of k8s/ (test/deploy/k8s.test.ts, k8s-engines.test.ts): an overlay rendered with
// `kubectl kustomize`, every object validated against the Kubernetes OpenAPI schemas
// (kubernetes-models: types, enums and required fields) or, for the operators' resources, against
// their vendored CRDs (crds.ts), and the policy of k8s/README.md for each workload: probes on
// the health port, a restricted security context, requests and limits, a grace period longer than
// the stop deadline, only settings the service reads with values its config accepts, and secrets
// only from Secrets the overlay can count on.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { SETTINGS, type Setting } from '@trips/runtime';
import { crdProblems } from './crds.ts';
import { durationMs, readText, root, settingsRead, type Deployable } from './helpers.ts';

export type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: any };
} & any;

const rendered = new Map<string, Obj[]>();

/** The overlay as kubectl renders it; a fresh copy each time, rendered once per file. */
export function render(overlay: string): Obj[] {
  if (!rendered.has(overlay)) rendered.set(overlay, renderWithKubectl(overlay));
  return structuredClone(rendered.get(overlay)!);
}

/**
 * The overlay rendered with an optional component switched on the way the overlays say: in a copy
 * of k8s/, every overlay's commented-out `# components:` and `#   - ../../components/<name>` lines
 * uncommented. Also which overlays offered those lines.
 */
export function renderOptedIn(overlay: string, component: string): { objects: Obj[]; offeredBy: string[] } {
  const copy = mkdtempSync(join(tmpdir(), 'trips-k8s-'));
  try {
    const crds = join(root, 'k8s', 'crds');
    cpSync(join(root, 'k8s'), join(copy, 'k8s'), { recursive: true, filter: (src) => !src.startsWith(crds) });
    const commented = `# components:\n#   - ../../components/${component}\n`;
    const offeredBy: string[] = [];
    for (const name of readdirSync(join(copy, 'k8s', 'overlays'))) {
      const file = join(copy, 'k8s', 'overlays', name, 'kustomization.yaml');
      const text = readFileSync(file, 'utf8');
      if (!text.includes(commented)) continue;
      writeFileSync(file, text.replace(commented, commented.replace(/^# /gm, '')));
      offeredBy.push(name);
    }
    return { objects: renderWithKubectl(join(copy, overlay)), offeredBy };
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

function renderWithKubectl(overlay: string): Obj[] {
  let out: string;
  try {
    out = execFileSync('kubectl', ['kustomize', overlay], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
  } catch (error: any) {
    if (error.code === 'ENOENT') {
      throw new Error(
        'kubectl is needed to render k8s/ (apt-get install kubectl, or google-cloud-cli-kubectl)',
        {
          cause: error,
        },
      );
    }
    throw new Error(`kubectl kustomize ${overlay} failed: ${error.stderr ?? error.message}`, {
      cause: error,
    });
  }
  return parseAllDocuments(out).map((doc) => doc.toJS());
}

/** Problems of one object against the schema of its apiVersion and kind: Kubernetes' or a vendored CRD's. */
export async function schemaProblems(object: Obj): Promise<string[]> {
  const custom = crdProblems(object);
  if (custom) return custom;
  const { apiVersion, kind } = object;
  const path = apiVersion?.includes('/') ? `${apiVersion}/${kind}` : `v1/${kind}`;
  let Model: new (data: unknown) => { validate(): void };
  try {
    Model = (await import(`kubernetes-models/${path}`))[kind];
    if (!Model) throw new Error('no such kind');
  } catch {
    return [`${apiVersion} ${kind}: no Kubernetes schema for this apiVersion and kind`];
  }
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${kind}/${object.metadata?.name}: ${(error as Error).message}`];
  }
}

export const secretKeys = Object.keys(parse(readText('k8s/secret.example.yaml')).stringData);
/** The settings the table marks secret: they come from a Secret, never a ConfigMap or a literal. */
export const secretSettings = new Set(
  Object.entries(SETTINGS as Record<string, Setting>)
    .filter(([, setting]) => setting.secret)
    .map(([name]) => name),
);
const placeholders: Record<string, string> = {
  DATABASE_URL: 'postgres://trips:x@postgres:5432/trips',
  AMQP_URL: 'amqps://trips:x@rabbitmq:5671',
  SMTP_URL: 'smtps://u:x@smtp.example.com:465',
  REDIS_URL: 'rediss://:x@redis:6380',
};

/** What a workload of an overlay reads: the ConfigMaps, and the Secrets it may count on, by name. */
export interface Sources {
  configMaps: Map<string, Record<string, string>>;
  /** Each Secret's keys, with a value of the shape it holds (placeholder credentials). */
  secrets: Map<string, Record<string, string>>;
}

/**
 * The Secrets an overlay's workloads may read: trips-secrets, created out of band with the keys of
 * k8s/secret.example.yaml, and those the operators generate for the engines the overlay declares
 * (the keys and URL shapes their sources write: CloudNativePG's pkg/specs/secrets.go, the RabbitMQ
 * Cluster Operator's internal/resource/default_user_secret.go).
 */
export function sourcesOf(objects: Obj[]): Sources {
  const configMaps = new Map<string, Record<string, string>>(
    objects.filter((o) => o.kind === 'ConfigMap').map((c) => [c.metadata.name, c.data ?? {}]),
  );
  const secrets = new Map<string, Record<string, string>>([
    ['trips-secrets', Object.fromEntries(secretKeys.map((k) => [k, placeholders[k] ?? 'x']))],
  ]);
  for (const o of objects) {
    const { name, namespace } = o.metadata;
    if (o.apiVersion === 'postgresql.cnpg.io/v1' && o.kind === 'Cluster' && o.spec?.bootstrap?.initdb) {
      const { owner = 'app', database = 'app' } = o.spec.bootstrap.initdb;
      const host = `${name}-rw.${namespace}:5432`;
      secrets.set(`${name}-app`, {
        username: owner,
        user: owner,
        password: 'Xk3-pw',
        dbname: database,
        host: `${name}-rw`,
        port: '5432',
        uri: `postgresql://${owner}:Xk3-pw@${host}/${database}`,
        'fqdn-uri': `postgresql://${owner}:Xk3-pw@${name}-rw.${namespace}.svc.cluster.local:5432/${database}`,
      });
    }
    if (o.apiVersion === 'rabbitmq.com/v1beta1' && o.kind === 'RabbitmqCluster') {
      // Generated credentials are URL-safe base64, so the connection string is a valid URL.
      const [user, password] = ['default_user_Zq-9_aB3', 'pW-d_7xK'];
      const host = `${name}.${namespace}.svc`;
      secrets.set(`${name}-default-user`, {
        username: user,
        password,
        host,
        port: '5672',
        connection_string: `amqp://${user}:${password}@${host}:5672/`,
      });
    }
  }
  return { configMaps, secrets };
}

/** The environment a container gets: its ConfigMaps, its literal values, its secrets (placeholders). */
function containerEnv(container: any, { configMaps, secrets }: Sources): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? [])
    Object.assign(env, configMaps.get(from.configMapRef?.name) ?? {});
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = secrets.get(ref.name)?.[ref.key] ?? 'x';
    else if (e.valueFrom?.configMapKeyRef) env[e.name] = configMaps.get(ref.name)?.[ref.key] ?? '';
  }
  return env;
}

export function podProblems(pod: any, d: Deployable, sources: Sources, name: string) {
  const problems: string[] = [];
  const say = (message: string) => problems.push(`${name}: ${message}`);
  if (pod.securityContext?.runAsNonRoot !== true) say('pod securityContext.runAsNonRoot is not true');
  if (pod.securityContext?.seccompProfile?.type !== 'RuntimeDefault')
    say('pod seccompProfile is not RuntimeDefault');
  if (pod.automountServiceAccountToken !== false) say('mounts a service account token it does not need');
  const containers = pod.containers ?? [];
  if (containers.length !== 1) say(`${containers.length} containers, expected 1`);
  for (const c of containers) {
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) say(`${c.name}: allowPrivilegeEscalation is not false`);
    if (sc.readOnlyRootFilesystem !== true) say(`${c.name}: readOnlyRootFilesystem is not true`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) say(`${c.name}: capabilities do not drop ALL`);
    if (sc.privileged) say(`${c.name}: privileged`);
    const tmp = (c.volumeMounts ?? []).find((m: any) => m.mountPath === '/tmp');
    if (!tmp || !(pod.volumes ?? []).some((v: any) => v.name === tmp.name && v.emptyDir)) {
      say(`${c.name}: no emptyDir on /tmp under the read-only root`);
    }
    for (const kind of ['requests', 'limits']) {
      for (const resource of ['cpu', 'memory']) {
        if (!c.resources?.[kind]?.[resource]) say(`${c.name}: no ${resource} ${kind}`);
      }
    }
    if (c.command || c.args) say(`${c.name}: overrides the image's command (the package's start script)`);
    // Only settings the service reads; secrets only from the Secret; values its config accepts.
    const known = settingsRead(d);
    for (const e of c.env ?? []) {
      if (!known.has(e.name)) say(`${c.name}: sets ${e.name}, which it does not read`);
      if (secretSettings.has(e.name) && !e.valueFrom?.secretKeyRef)
        say(`${c.name}: ${e.name} not from a Secret`);
      const ref = e.valueFrom?.secretKeyRef;
      if (ref && !(ref.key in (sources.secrets.get(ref.name) ?? {}))) {
        say(
          `${c.name}: ${e.name} from ${ref.name}/${ref.key}, which neither k8s/secret.example.yaml describes nor an operator of the overlay generates`,
        );
      }
    }
    const env = containerEnv(c, sources);
    for (const required of d.required) if (!(required in env)) say(`${c.name}: ${required} is not set`);
    try {
      d.parse(env);
    } catch (error) {
      say(`${c.name}: its config refuses this environment: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** Everything a service Deployment must have (k8s/README.md); answers the problems found. */
export function deploymentProblems(dep: any, d: Deployable, sources: Sources): string[] {
  const name = `Deployment/${dep.metadata?.name}`;
  const pod = dep.spec?.template?.spec ?? {};
  const problems = podProblems(pod, d, sources, name);
  const say = (message: string) => problems.push(`${name}: ${message}`);
  for (const c of pod.containers ?? []) {
    const env = containerEnv(c, sources);
    const port = Number(env[d.health!.env] ?? d.health!.default);
    const portOf = (p: unknown) =>
      typeof p === 'number' ? p : (c.ports ?? []).find((x: any) => x.name === p)?.containerPort;
    const probes = { livenessProbe: '/healthz', readinessProbe: '/readyz', startupProbe: '/healthz' };
    for (const [probe, path] of Object.entries(probes)) {
      const get = c[probe]?.httpGet;
      if (!get) say(`${c.name}: no ${probe}`);
      else {
        if (get.path !== path) say(`${c.name}: ${probe} asks ${get.path}, expected ${path}`);
        if (portOf(get.port) !== port)
          say(`${c.name}: ${probe} on port ${get.port}, the service listens on ${port}`);
      }
    }
    // SIGKILL must not cut a graceful stop that is still within its deadline (plus any preStop).
    const deadlineS = durationMs(env[d.stopDeadline!.env] ?? d.stopDeadline!.default) / 1000;
    const preStop = c.lifecycle?.preStop?.exec?.command;
    const preStopS =
      preStop?.[0] === 'sleep' ? Number(preStop[1]) : (c.lifecycle?.preStop?.sleep?.seconds ?? 0);
    const grace = pod.terminationGracePeriodSeconds;
    if (grace === undefined || grace <= deadlineS + preStopS) {
      say(
        `terminationGracePeriodSeconds ${grace} is not above ${d.stopDeadline!.env} ${deadlineS}s + preStop ${preStopS}s`,
      );
    }
  }
  return problems;
}

export const selects = (selector: any, labels: any) =>
  !!selector?.matchLabels && Object.entries(selector.matchLabels).every(([k, v]) => labels?.[k] === v);
