import type { StartedTestContainer } from 'testcontainers';
import { testImages } from './images.ts';

// testcontainers takes a second or two to load, so it is imported only when containers are needed.
const testcontainers = () => import('testcontainers');

/**
 * Why no container runtime can be used, or undefined when one answers. testcontainers looks where
 * it always does (DOCKER_HOST, ~/.testcontainers.properties, the Docker and Podman sockets); a
 * runtime that accepts the connection and never answers is given `timeout` (a duration), not forever.
 */
export async function containerRuntimeProblem(timeout: string): Promise<string | undefined> {
  const [{ getContainerRuntimeClient }, { parseDuration, withTimeout }] = await Promise.all([
    testcontainers(),
    import('@trips/runtime'),
  ]);
  let ms: number;
  try {
    ms = parseDuration(timeout);
  } catch (error) {
    throw new Error(`TEST_RUNTIME_TIMEOUT: ${(error as Error).message}`, { cause: error });
  }
  try {
    await withTimeout(getContainerRuntimeClient(), ms, () => new Error(`no answer within ${timeout}`));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

export interface TestContainers {
  /** DATABASE_URL, AMQP_URL and REDIS_URL. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** PostgreSQL, RabbitMQ and Redis, each in a container of its own, started together. */
export async function startTestContainers(): Promise<TestContainers> {
  const { GenericContainer, Wait } = await testcontainers();
  const starting = [
    new GenericContainer(testImages.postgres)
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .withExposedPorts(5432)
      // The first is the init run's server; the second is the real one.
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2)),
    // The image lets guest in from other hosts than loopback, as compose's does.
    new GenericContainer(testImages.rabbitmq)
      .withExposedPorts(5672)
      .withWaitStrategy(Wait.forLogMessage(/Server startup complete/)),
    new GenericContainer(testImages.redis)
      .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/)),
  ].map((container) => container.withStartupTimeout(180_000).start());
  const settled = await Promise.allSettled(starting);
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(started.map((container) => container.stop()));
  };
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const [postgres, rabbitmq, redis] = started as [
    StartedTestContainer,
    StartedTestContainer,
    StartedTestContainer,
  ];
  return {
    env: {
      DATABASE_URL: `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`,
      AMQP_URL: `amqp://guest:guest@${rabbitmq.getHost()}:${rabbitmq.getMappedPort(5672)}`,
      REDIS_URL: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
      TEST_SERVICES: 'containers',
    },
    stop,
  };
}
