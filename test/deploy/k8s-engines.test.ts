// The engines of k8s/overlays/prod-engines (k8s/components/engines): what the platform team expects
// of a RabbitMQ cluster and a Postgres cluster run by their operators, checked on the rendered
// overlay; the CRDs they are validated against are the files k8s/crds/README.md records; and that
// validation refuses broken resources. The overlay also passes every check of k8s.test.ts.
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { parse } from 'yaml';
import { readText } from './helpers.ts';
import { render, schemaProblems, selects, type Obj } from './k8s-checks.ts';

const objects = render('k8s/overlays/prod-engines');
const only = (apiVersion: string, kind: string): Obj => {
  const found = objects.filter((o) => o.apiVersion === apiVersion && o.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!;
};
const rabbit = () => only('rabbitmq.com/v1beta1', 'RabbitmqCluster');
const postgres = () => only('postgresql.cnpg.io/v1', 'Cluster');
const compose = parse(readText('docker-compose.yml'));
const workloads = () => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
const envOf = (o: Obj, name: string) =>
  o.spec.template.spec.containers[0].env.find((e: any) => e.name === name);

/** rabbitmq.conf lines as a map (the operator appends additionalConfig to its own). */
const rabbitConf = (): Record<string, string> =>
  Object.fromEntries(
    String(rabbit().spec.rabbitmq?.additionalConfig ?? '')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'))
      .map((line) => line.split(/\s*=\s*/, 2) as [string, string]),
  );

const version = (tag: string) => tag.split(/[.-]/).slice(0, 2).map(Number) as [number, number];

describe('RabbitMQ (RabbitmqCluster)', () => {
  test('three nodes of the version docs/operations.md supports, the image docker-compose.yml pins', () => {
    const cluster = rabbit();
    expect(cluster.spec.replicas).toBe(3);
    expect(cluster.spec.image).toBe(compose.services.rabbitmq.image);
    const [, supported] = /images and clusters run \*\*(\d+\.\d+) or later\*\*/.exec(
      readText('docs/operations.md'),
    )!;
    const [major, minor] = version(cluster.spec.image.split(':')[1]);
    const [wantMajor, wantMinor] = version(supported!);
    expect(major * 100 + minor).toBeGreaterThanOrEqual(wantMajor * 100 + wantMinor);
  });

  test('quorum queues by default, and a returning node made a member of them again', () => {
    const conf = rabbitConf();
    expect(conf['default_queue_type']).toBe('quorum');
    expect(conf['quorum_queue.continuous_membership_reconciliation.enabled']).toBe('true');
    expect(Number(conf['quorum_queue.continuous_membership_reconciliation.target_group_size'])).toBe(
      rabbit().spec.replicas,
    );
  });

  test('never two nodes on one Kubernetes node', () => {
    const { name } = rabbit().metadata;
    const terms = rabbit().spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
    const podLabels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'rabbitmq' };
    expect(
      terms.some(
        (t: any) => t.topologyKey === 'kubernetes.io/hostname' && selects(t.labelSelector, podLabels),
      ),
    ).toBe(true);
  });

  test('a PodDisruptionBudget (the operator makes none) lets a drain take one node at a time', () => {
    // The labels the operator gives its pods (internal/metadata/label.go).
    const podLabels = {
      'app.kubernetes.io/name': rabbit().metadata.name,
      'app.kubernetes.io/component': 'rabbitmq',
      'app.kubernetes.io/part-of': 'rabbitmq',
    };
    const pdbs = objects.filter(
      (o) => o.kind === 'PodDisruptionBudget' && selects(o.spec.selector, podLabels),
    );
    expect(pdbs).toHaveLength(1);
    expect(pdbs[0].spec.maxUnavailable).toBe(1);
  });

  test('requests equal limits (RabbitMQ sizes its memory alarm from the limit), data on a volume', () => {
    const { resources, persistence } = rabbit().spec;
    expect(resources.requests).toEqual(resources.limits);
    expect(persistence.storage).toMatch(/^\d+Gi$/);
  });
});

describe('PostgreSQL (CloudNativePG Cluster)', () => {
  test('a primary and a replica, on different nodes, of the major version the project runs', () => {
    const { spec } = postgres();
    expect(spec.instances).toBe(2);
    const composeMajor = /^postgres:(\d+)/.exec(compose.services.postgres.image)![1];
    expect(/:(\d+)[.-]/.exec(spec.imageName)?.[1]).toBe(composeMajor);
    expect(spec.affinity).toMatchObject({
      enablePodAntiAffinity: true,
      podAntiAffinityType: 'required',
      topologyKey: 'kubernetes.io/hostname',
    });
  });

  test('commits wait for the replica while it is there; the operator keeps its budgets', () => {
    const { spec } = postgres();
    expect(spec.postgresql.synchronous).toMatchObject({ number: 1, dataDurability: 'preferred' });
    expect(spec.enablePDB).not.toBe(false);
  });

  test('the database and role the migrations and the API need', () => {
    const { owner, database, postInitSQL } = postgres().spec.bootstrap.initdb;
    expect([owner, database]).toEqual(['trips', 'trips']);
    // The API refuses to start without it (docs/operations.md, "Deploy").
    expect(postInitSQL).toContain(`GRANT pg_monitor TO ${owner}`);
  });

  test("max_connections covers the services' pools at their maxima (docs/operations.md, Scale)", () => {
    const hpaMax = (name: string) =>
      objects.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === name).spec.maxReplicas;
    const deployment = (name: string) =>
      objects.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
    const apiPool = Number(envOf(deployment('trips-api'), 'API_DB_POOL_SIZE').value);
    // Per pod: the API's pool and its LISTEN connection, a recorder's 4, a dispatcher's 13.
    const needed =
      hpaMax('trips-api') * (apiPool + 1) +
      deployment('trips-recorder').spec.replicas * 4 +
      hpaMax('trips-dispatcher') * 13;
    expect(Number(postgres().spec.postgresql.parameters.max_connections)).toBeGreaterThan(needed);
  });

  test('WAL archived and a base backup every night, through the Barman Cloud plugin', () => {
    const cluster = postgres();
    const archiver = cluster.spec.plugins.find((p: any) => p.isWALArchiver);
    expect(archiver.name).toBe('barman-cloud.cloudnative-pg.io');
    const store = only('barmancloud.cnpg.io/v1', 'ObjectStore');
    expect(archiver.parameters.barmanObjectName).toBe(store.metadata.name);
    expect(store.spec.retentionPolicy).toMatch(/^\d+[dwm]$/);
    const backup = only('postgresql.cnpg.io/v1', 'ScheduledBackup');
    expect(backup.spec).toMatchObject({
      cluster: { name: cluster.metadata.name },
      method: 'plugin',
      pluginConfiguration: { name: archiver.name },
    });
    // CloudNativePG's schedule has six fields, seconds first.
    expect(backup.spec.schedule.split(' ')).toHaveLength(6);
  });
});

test("the services connect through the operators' Secrets; SMTP and Redis through trips-secrets", () => {
  const refs = Object.fromEntries(
    workloads().map((o) => [
      o.metadata.name,
      ['DATABASE_URL', 'AMQP_URL', 'SMTP_URL', 'REDIS_URL']
        .map((name) => envOf(o, name)?.valueFrom.secretKeyRef)
        .filter(Boolean)
        .map((ref: any) => `${ref.name}/${ref.key}`),
    ]),
  );
  const db = `${postgres().metadata.name}-app/uri`;
  const amqp = `${rabbit().metadata.name}-default-user/connection_string`;
  expect(refs).toEqual({
    'trips-api': [db, amqp, 'trips-secrets/REDIS_URL'],
    'trips-recorder': [db, amqp],
    'trips-dispatcher': [db, amqp, 'trips-secrets/SMTP_URL'],
    'trips-migrate': [db],
  });
});

test('the engines carry app.kubernetes.io/component=engine, so k8s/README.md applies them first', () => {
  const engines = objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'engine');
  // Custom resources: an API group with a dot that is not one of Kubernetes' own (*.k8s.io); the
  // alerts' PrometheusRule is monitoring (components/monitoring), not an engine.
  const custom = objects.filter((o) => {
    const group = o.apiVersion.split('/')[0];
    const monitoring = o.metadata.labels?.['app.kubernetes.io/component'] === 'monitoring';
    return group.includes('.') && !group.endsWith('.k8s.io') && !monitoring;
  });
  expect(engines.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
    [...custom.map((o) => `${o.kind}/${o.metadata.name}`), 'PodDisruptionBudget/trips-rabbitmq'].sort(),
  );
  expect(readText('k8s/README.md')).toContain('-l app.kubernetes.io/component=engine');
});

test('k8s/crds/ holds exactly the files its README records, with their sha256', () => {
  const readme = readText('k8s/crds/README.md');
  const recorded = [...readme.matchAll(/^\| `([^`]+\.yaml)` .*\| `([0-9a-f]{64})` \|$/gm)].map(
    ([, f, sha]) => [f, sha],
  );
  const files = readdirSync(`${import.meta.dirname}/../../k8s/crds`).filter((f) => f.endsWith('.yaml'));
  const actual = files.map((f) => [
    f,
    createHash('sha256')
      .update(readText(`k8s/crds/${f}`))
      .digest('hex'),
  ]);
  expect(actual.sort()).toEqual(recorded.sort());
});

test('k8s/README.md installs the operator versions whose CRDs k8s/crds/ vendors', () => {
  const vendored = readText('k8s/crds/README.md');
  const readme = readText('k8s/README.md');
  const versionOf = (repo: string) =>
    new RegExp(`\\(\`${repo}\`\\)\\s*\\| v([\\d.]+) \\|`).exec(vendored)![1];
  expect(readme).toContain(`cluster-operator/releases/download/v${versionOf('rabbitmq/cluster-operator')}/`);
  const cnpg = versionOf('cloudnative-pg/cloudnative-pg')!;
  expect(readme).toContain(`release-${cnpg.split('.').slice(0, 2).join('.')}/releases/cnpg-${cnpg}.yaml`);
  expect(readme).toContain(
    `plugin-barman-cloud/releases/download/v${versionOf('cloudnative-pg/plugin-barman-cloud')}/`,
  );
});

describe('the CRD validation refuses broken custom resources', () => {
  const of = (kind: string) => structuredClone(objects.find((o) => o.kind === kind));
  test.each([
    [
      'RabbitmqCluster',
      'a misspelt field',
      (o: any) => (o.spec.replica = 3),
      /\/spec has an unknown field replica/,
    ],
    [
      'RabbitmqCluster',
      'a misspelt field inside an embedded Kubernetes type',
      (o: any) =>
        (o.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologykey = 'x'),
      /requiredDuringSchedulingIgnoredDuringExecution\/0 has an unknown field topologykey/,
    ],
    [
      'RabbitmqCluster',
      'replicas that are not a number',
      (o: any) => (o.spec.replicas = 'three'),
      /\/spec\/replicas must be integer/,
    ],
    [
      'RabbitmqCluster',
      'a quantity that is neither a number nor a string',
      (o: any) => (o.spec.resources.limits.cpu = true),
      /\/spec\/resources\/limits\/cpu must be integer,string/,
    ],
    [
      'RabbitmqCluster',
      'shell substitution in envConfig (a CEL rule)',
      (o: any) => (o.spec.rabbitmq.envConfig = 'X=$(id)'),
      /envConfig must not contain shell command substitution/,
    ],
    [
      'Cluster',
      'no instances',
      (o: any) => delete o.spec.instances,
      /\/spec must have required property 'instances'/,
    ],
    [
      'Cluster',
      'a misspelt storage size',
      (o: any) => (o.spec.storage.sise = '1Gi'),
      /\/spec\/storage has an unknown field sise/,
    ],
    [
      'Cluster',
      'a value outside its enum',
      (o: any) => (o.spec.primaryUpdateStrategy = 'sometimes'),
      /\/spec\/primaryUpdateStrategy must be equal to one of the allowed values: unsupervised, supervised/,
    ],
    [
      'Cluster',
      'an image catalog beside the image (a CEL rule)',
      (o: any) =>
        (o.spec.imageCatalogRef = {
          apiGroup: 'postgresql.cnpg.io',
          kind: 'ImageCatalog',
          name: 'pg',
          major: 15,
        }),
      /\/spec imageName and imageCatalogRef are mutually exclusive/,
    ],
    [
      'Cluster',
      'preferred durability with standby names (a CEL rule)',
      (o: any) => (o.spec.postgresql.synchronous.standbyNamesPre = ['other']),
      /dataDurability set to 'preferred' requires empty 'standbyNamesPre'/,
    ],
    [
      'ObjectStore',
      'a serverName in the store (a CEL rule)',
      (o: any) => (o.spec.configuration.serverName = 'old'),
      /use the 'serverName' plugin parameter in the Cluster resource/,
    ],
    [
      'ScheduledBackup',
      'an unknown method',
      (o: any) => (o.spec.method = 'plugins'),
      /\/spec\/method must be equal to one of/,
    ],
    [
      'RabbitmqCluster',
      'a version the operator does not serve',
      (o: any) => (o.apiVersion = 'rabbitmq.com/v1'),
      /^rabbitmq.com\/v1 RabbitmqCluster: no served version of this kind in k8s\/crds\/$/,
    ],
  ])('%s: %s', async (kind, _what, breakIt, message) => {
    const broken = of(kind);
    expect(await schemaProblems(broken)).toEqual([]);
    breakIt(broken);
    expect((await schemaProblems(broken)).join('\n')).toMatch(message);
  });
});
