// k8s/: every overlay rendered with `kubectl kustomize` (on this machine and in CI), every object
// validated against the Kubernetes OpenAPI schemas or the operators' vendored CRDs, then the policy
// of k8s/README.md checked on each workload (the checks are in k8s-checks.ts; the engines
// themselves in k8s-engines.test.ts).
import { parse } from 'yaml';
import { deployables, readText, services, settingsRead } from './helpers.ts';
import {
  deploymentProblems,
  podProblems,
  render,
  schemaProblems,
  secretKeys,
  secretSettings,
  selects,
  sourcesOf,
} from './k8s-checks.ts';

const overlays = ['dev', 'prod', 'prod-engines'];

describe.each([
  ['dev', 'trips-dev'],
  ['prod', 'trips'],
  ['prod-engines', 'trips'],
])('k8s/overlays/%s', (overlay, namespace) => {
  const objects = render(`k8s/overlays/${overlay}`);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const sources = sourcesOf(objects);
  const { configMaps } = sources;
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
      expect(deploymentProblems(dep, deployables[s], sources)).toEqual([]);
      expect(dep.spec.template.spec.containers[0].image).toMatch(new RegExp(`(^|/)trips/${s}:[\\w.-]+$`));
    },
  );

  test('the migrate Job runs the migrate image once, restricted like the services', () => {
    const [job] = byKind('Job');
    expect(job.metadata.labels['app.kubernetes.io/component']).toBe('migrate');
    const pod = job.spec.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.containers[0].image).toMatch(/(^|\/)trips\/migrate:[\w.-]+$/);
    expect(podProblems(pod, deployables.migrate, sources, 'Job/trips-migrate')).toEqual([]);
  });

  test('every shared setting is read by some service, and every service gets the settings', () => {
    const read = new Set(Object.values(deployables).flatMap((d) => [...settingsRead(d)]));
    // A dashboard's ConfigMap is no workload's environment (monitoring.test.ts checks it).
    const dashboards = new Set(byKind('ConfigMap').filter((c) => c.metadata.labels?.grafana_dashboard));
    for (const [name, data] of configMaps) {
      if ([...dashboards].some((d) => d.metadata.name === name)) continue;
      expect([name, Object.keys(data).filter((k) => !read.has(k))]).toEqual([name, []]);
    }
    for (const s of services) {
      const refs = deploymentOf(s).spec.template.spec.containers[0].envFrom.map(
        (e: any) => e.configMapRef.name,
      );
      expect(refs.every((r: string) => configMaps.has(r))).toBe(true);
    }
  });

  test('API_TRUST_PROXY names the proxies in front explicitly, never a whole class of networks', () => {
    const values = [...configMaps.values()].flatMap((data) => data.API_TRUST_PROXY ?? []);
    expect(values).toHaveLength(1);
    const entries = values[0]!.split(',').map((entry) => entry.trim());
    for (const entry of entries) expect(entry).toMatch(/^[\d.:a-f]+(\/\d{1,3})?$/);
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

  test('SETTINGS_URL, the page owners’ e-mails link, is on the Ingress that serves /settings', () => {
    // Settings can be set in more than one ConfigMap; the dispatcher, which sends the e-mails, reads them.
    const dispatcher = deploymentOf('dispatcher').spec.template.spec.containers[0];
    const values = dispatcher.envFrom.map((e: any) => configMaps.get(e.configMapRef.name)?.SETTINGS_URL);
    const url = new URL(values.filter(Boolean).at(-1));
    const [ingress] = byKind('Ingress');
    const rule = ingress.spec.rules.find((r: any) => r.host === url.hostname);
    expect([url.hostname, rule?.host]).toEqual([url.hostname, url.hostname]);
    const path = rule.http.paths.find((p: any) => url.pathname.startsWith(p.path));
    expect(path.backend.service.name).toBe(byKind('Service')[0].metadata.name);
    const tls = (ingress.spec.tls ?? []).some((t: any) => t.hosts.includes(url.hostname));
    expect(url.protocol).toBe(tls ? 'https:' : 'http:');
  });

  if (overlay.startsWith('prod')) {
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
  for (const overlay of overlays) {
    expect(render(`k8s/overlays/${overlay}`).filter((o) => o.kind === 'Secret')).toEqual([]);
  }
});

describe('the checks fail on broken manifests', () => {
  const objects = render('k8s/overlays/prod');
  const sources = sourcesOf(objects);
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
    [
      "a database URL from an operator's Secret the overlay has no engine for",
      (c: any) =>
        (c.env.find((e: any) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef = {
          name: 'trips-postgres-app',
          key: 'uri',
        }),
      /DATABASE_URL from trips-postgres-app\/uri, which neither/,
    ],
  ])('policy: %s', (_what, breakIt, message) => {
    const broken = api();
    breakIt(broken.spec.template.spec.containers[0]);
    expect(deploymentProblems(broken, deployables.api, sources).join('\n')).toMatch(message);
  });

  test('policy: a grace period not above the stop deadline and the preStop sleep', () => {
    const broken = api();
    broken.spec.template.spec.terminationGracePeriodSeconds = 25; // 5 s preStop + 20 s deadline
    expect(deploymentProblems(broken, deployables.api, sources).join('\n')).toMatch(
      /terminationGracePeriodSeconds 25 is not above API_SHUTDOWN_DEADLINE 20s \+ preStop 5s/,
    );
  });

  test('policy: a pod that may run as root', () => {
    const broken = api();
    delete broken.spec.template.spec.securityContext.runAsNonRoot;
    expect(deploymentProblems(broken, deployables.api, sources).join('\n')).toMatch(/runAsNonRoot/);
  });
});
