// k8s/: both overlays rendered with `kubectl kustomize` (on this machine and in CI), every object
// validated against the Kubernetes OpenAPI schemas (kubernetes-models: types, enums and required
// fields), then the policy of docs/operations.md checked on each workload: probes on the health
// port, a restricted security context, requests and limits, a grace period longer than the stop
// deadline, and only settings each service reads, with values its config accepts.
import { execFileSync } from 'node:child_process';
import { parse, parseAllDocuments } from 'yaml';
import {
  deployables,
  durationMs,
  readText,
  root,
  services,
  settingsRead,
  type Deployable,
} from './helpers.ts';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: any };
} & any;

const rendered = new Map<string, Obj[]>();

/** The overlay as kubectl renders it; a fresh copy each time, rendered once per file. */
function render(overlay: string): Obj[] {
  if (!rendered.has(overlay)) rendered.set(overlay, renderWithKubectl(overlay));
  return structuredClone(rendered.get(overlay)!);
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

/** Problems of one object against the Kubernetes schema of its apiVersion and kind. */
async function schemaProblems(object: Obj): Promise<string[]> {
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

const secretKeys = Object.keys(parse(readText('k8s/secret.example.yaml')).stringData);
const secretSettings = new Set(['DATABASE_URL', 'AMQP_URL', 'SMTP_URL', 'REDIS_URL']);
const placeholders: Record<string, string> = {
  DATABASE_URL: 'postgres://trips:x@postgres:5432/trips',
  AMQP_URL: 'amqps://trips:x@rabbitmq:5671',
  SMTP_URL: 'smtps://u:x@smtp.example.com:465',
  REDIS_URL: 'rediss://:x@redis:6380',
};

/** The environment a container gets: its ConfigMaps, its literal values, its secrets (placeholders). */
function containerEnv(
  container: any,
  configMaps: Map<string, Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? [])
    Object.assign(env, configMaps.get(from.configMapRef?.name) ?? {});
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = placeholders[e.valueFrom.secretKeyRef.key] ?? 'x';
    else if (e.valueFrom?.configMapKeyRef) {
      env[e.name] = configMaps.get(e.valueFrom.configMapKeyRef.name)?.[e.valueFrom.configMapKeyRef.key] ?? '';
    }
  }
  return env;
}

function podProblems(pod: any, d: Deployable, configMaps: Map<string, Record<string, string>>, name: string) {
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
      if (ref && (ref.name !== 'trips-secrets' || !secretKeys.includes(ref.key))) {
        say(
          `${c.name}: ${e.name} from ${ref.name}/${ref.key}, which k8s/secret.example.yaml does not describe`,
        );
      }
    }
    const env = containerEnv(c, configMaps);
    for (const required of d.required) if (!(required in env)) say(`${c.name}: ${required} is not set`);
    try {
      d.parse(env);
    } catch (error) {
      say(`${c.name}: its config refuses this environment: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** Everything a service Deployment must have (docs/operations.md); answers the problems found. */
function deploymentProblems(
  dep: any,
  d: Deployable,
  configMaps: Map<string, Record<string, string>>,
): string[] {
  const name = `Deployment/${dep.metadata?.name}`;
  const pod = dep.spec?.template?.spec ?? {};
  const problems = podProblems(pod, d, configMaps, name);
  const say = (message: string) => problems.push(`${name}: ${message}`);
  for (const c of pod.containers ?? []) {
    const env = containerEnv(c, configMaps);
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

const selects = (selector: any, labels: any) =>
  !!selector?.matchLabels && Object.entries(selector.matchLabels).every(([k, v]) => labels?.[k] === v);

describe.each([
  ['dev', 'trips-dev'],
  ['prod', 'trips'],
])('k8s/overlays/%s', (overlay, namespace) => {
  const objects = render(`k8s/overlays/${overlay}`);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const configMaps = new Map<string, Record<string, string>>(
    byKind('ConfigMap').map((c) => [c.metadata.name, c.data ?? {}]),
  );
  const deploymentOf = (component: string) =>
    byKind('Deployment').find((o) => o.metadata.labels?.['app.kubernetes.io/component'] === component);

  test('every object is valid against the Kubernetes schemas', async () => {
    expect(objects.length).toBeGreaterThan(10);
    const problems = (await Promise.all(objects.map(schemaProblems))).flat();
    expect(problems).toEqual([]);
  });

  test(`everything lands in namespace ${namespace}, and no Secret is committed`, () => {
    expect(objects.filter((o) => o.metadata.namespace !== namespace).map((o) => o.kind)).toEqual([]);
    expect(byKind('Secret')).toEqual([]);
  });

  test.each(services)(
    'the %s Deployment has probes, limits, a restricted context and its grace period',
    (s) => {
      const dep = deploymentOf(s);
      expect(dep).toBeDefined();
      expect(deploymentProblems(dep, deployables[s], configMaps)).toEqual([]);
      expect(dep.spec.template.spec.containers[0].image).toMatch(new RegExp(`(^|/)trips/${s}:[\\w.-]+$`));
    },
  );

  test('the migrate Job runs the migrate image once, restricted like the services', () => {
    const [job] = byKind('Job');
    expect(job.metadata.labels['app.kubernetes.io/component']).toBe('migrate');
    const pod = job.spec.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.containers[0].image).toMatch(/(^|\/)trips\/migrate:[\w.-]+$/);
    expect(podProblems(pod, deployables.migrate, configMaps, 'Job/trips-migrate')).toEqual([]);
  });

  test('every shared setting is read by some service, and every service gets the settings', () => {
    const read = new Set(Object.values(deployables).flatMap((d) => [...settingsRead(d)]));
    for (const [name, data] of configMaps) {
      expect([name, Object.keys(data).filter((k) => !read.has(k))]).toEqual([name, []]);
    }
    for (const s of services) {
      const refs = deploymentOf(s).spec.template.spec.containers[0].envFrom.map(
        (e: any) => e.configMapRef.name,
      );
      expect(refs.every((r: string) => configMaps.has(r))).toBe(true);
    }
  });

  test('api and dispatcher scale with an autoscaling/v2 HPA that owns their replica count', () => {
    for (const s of ['api', 'dispatcher']) {
      const dep = deploymentOf(s);
      const hpa = byKind('HorizontalPodAutoscaler').find(
        (h) => h.spec.scaleTargetRef.name === dep.metadata.name,
      );
      expect(hpa?.apiVersion).toBe('autoscaling/v2');
      expect(hpa.spec.scaleTargetRef.kind).toBe('Deployment');
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
      expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
      expect(dep.spec.replicas).toBeUndefined();
    }
    expect(deploymentOf('recorder').spec.replicas).toBeGreaterThanOrEqual(1);
  });

  test('each Deployment has a PodDisruptionBudget that selects its pods and only them', () => {
    for (const s of services) {
      const dep = deploymentOf(s);
      const pdbs = byKind('PodDisruptionBudget').filter((p) =>
        selects(p.spec.selector, dep.spec.template.metadata.labels),
      );
      expect(pdbs.map((p) => p.metadata.name)).toEqual([dep.metadata.name]);
      const others = byKind('Deployment').filter(
        (o) => o !== dep && selects(pdbs[0].spec.selector, o.spec.template.metadata.labels),
      );
      expect(others).toEqual([]);
    }
  });

  test('the API Service reaches the API pods and the Ingress reaches the Service', () => {
    const api = deploymentOf('api');
    const [service] = byKind('Service');
    expect(selects({ matchLabels: service.spec.selector }, api.spec.template.metadata.labels)).toBe(true);
    const containerPorts = api.spec.template.spec.containers[0].ports.map((p: any) => p.name);
    expect(containerPorts).toContain(service.spec.ports[0].targetPort);
    const [ingress] = byKind('Ingress');
    const backend = ingress.spec.rules[0].http.paths[0].backend.service;
    expect(backend.name).toBe(service.metadata.name);
    expect(service.spec.ports.map((p: any) => p.name)).toContain(backend.port.name);
  });

  if (overlay === 'prod') {
    test('prod pins image versions and requires SMTP_URL', () => {
      const images = objects
        .flatMap((o) => o.spec?.template?.spec?.containers ?? [])
        .map((c: any) => c.image);
      expect(images.length).toBe(4);
      for (const image of images) expect(image).toMatch(/:(?!latest$|dev$)[\w.-]+$/);
      const smtp = deploymentOf('dispatcher').spec.template.spec.containers[0].env.find(
        (e: any) => e.name === 'SMTP_URL',
      );
      expect(smtp.valueFrom.secretKeyRef.optional).not.toBe(true);
      expect(byKind('Ingress')[0].spec.tls).toBeDefined();
    });
  }
});

test('k8s/secret.example.yaml is a valid Secret that no kustomization applies', async () => {
  const secret = parse(readText('k8s/secret.example.yaml'));
  expect(await schemaProblems(secret)).toEqual([]);
  expect(secretKeys.sort()).toEqual([...secretSettings].sort());
  for (const overlay of ['dev', 'prod']) {
    expect(render(`k8s/overlays/${overlay}`).filter((o) => o.kind === 'Secret')).toEqual([]);
  }
});

describe('the checks fail on broken manifests', () => {
  const objects = render('k8s/overlays/prod');
  const configMaps = new Map<string, Record<string, string>>(
    objects.filter((o) => o.kind === 'ConfigMap').map((c) => [c.metadata.name, c.data ?? {}]),
  );
  const api = () =>
    structuredClone(objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'trips-api'));

  test.each([
    [
      'a Deployment without selector',
      (o: any) => delete o.spec.selector,
      /spec must have required property selector/,
    ],
    [
      'a container without a name',
      (o: any) => delete o.spec.template.spec.containers[0].name,
      /containers\/0 must have required property name/,
    ],
    [
      'replicas that are not a number',
      (o: any) => (o.spec.replicas = 'two'),
      /spec\/replicas must be integer/,
    ],
    [
      'a probe port that is neither a number nor a string',
      (o: any) => (o.spec.template.spec.containers[0].livenessProbe.httpGet.port = {}),
      /livenessProbe\/httpGet\/port must match exactly one schema/,
    ],
  ])('schema: %s', async (_what, breakIt, message) => {
    const broken = api();
    breakIt(broken);
    expect((await schemaProblems(broken)).join('\n')).toMatch(message);
  });

  test('schema: an apiVersion Kubernetes does not have', async () => {
    expect(await schemaProblems({ ...api(), apiVersion: 'apps/v1beta9' })).toEqual([
      'apps/v1beta9 Deployment: no Kubernetes schema for this apiVersion and kind',
    ]);
  });

  test.each([
    ['no readiness probe', (c: any) => delete c.readinessProbe, /no readinessProbe/],
    [
      'a liveness probe on the wrong port',
      (c: any) => (c.livenessProbe.httpGet.port = 8080),
      /livenessProbe on port 8080/,
    ],
    ['no memory limit', (c: any) => delete c.resources.limits.memory, /no memory limits/],
    [
      'a writable root filesystem',
      (c: any) => (c.securityContext.readOnlyRootFilesystem = false),
      /readOnlyRootFilesystem/,
    ],
    ['capabilities kept', (c: any) => delete c.securityContext.capabilities, /drop ALL/],
    [
      'a misspelt setting',
      (c: any) => c.env.push({ name: 'API_SHUTDOWN_DEADLNE', value: '20s' }),
      /API_SHUTDOWN_DEADLNE, which it does not read/,
    ],
    [
      'a bad value',
      (c: any) => (c.env.find((e: any) => e.name === 'PORT').value = 'http'),
      /config refuses this environment:[^]*PORT must be a whole number/,
    ],
    [
      'a secret as a literal',
      (c: any) => {
        const redis = c.env.find((e: any) => e.name === 'REDIS_URL');
        delete redis.valueFrom;
        redis.value = 'redis://r:6379';
      },
      /REDIS_URL not from a Secret/,
    ],
  ])('policy: %s', (_what, breakIt, message) => {
    const broken = api();
    breakIt(broken.spec.template.spec.containers[0]);
    expect(deploymentProblems(broken, deployables.api, configMaps).join('\n')).toMatch(message);
  });

  test('policy: a grace period not above the stop deadline and the preStop sleep', () => {
    const broken = api();
    broken.spec.template.spec.terminationGracePeriodSeconds = 25; // 5 s preStop + 20 s deadline
    expect(deploymentProblems(broken, deployables.api, configMaps).join('\n')).toMatch(
      /terminationGracePeriodSeconds 25 is not above API_SHUTDOWN_DEADLINE 20s \+ preStop 5s/,
    );
  });

  test('policy: a pod that may run as root', () => {
    const broken = api();
    delete broken.spec.template.spec.securityContext.runAsNonRoot;
    expect(deploymentProblems(broken, deployables.api, configMaps).join('\n')).toMatch(/runAsNonRoot/);
  });
});
