import { containerRuntimeProblem } from './containers.ts';
import { describeSilent, silentServices } from './probe.ts';

export type TestServices = 'local' | 'containers';

/** Neither way works: the one message says what was found and both ways out. */
export class NoTestServices extends Error {
  constructor(found: string) {
    super(
      `test services: ${found}.\n` +
        'Either start PostgreSQL, RabbitMQ and Redis (on Debian `bash scripts/services.sh`; anywhere with Docker ' +
        '`docker compose up -d postgres rabbitmq redis`), or start Docker, and the tests run them in containers ' +
        'of their own (TEST_SERVICES=local or containers forces one way; docs/design/test-services.md).',
    );
  }
}

/**
 * Where this run's PostgreSQL, RabbitMQ and Redis come from: the ones at DATABASE_URL, AMQP_URL
 * and REDIS_URL when all three answer, else containers when a runtime answers. TEST_SERVICES
 * forces either; TEST_RUNTIME_TIMEOUT (10s) bounds the wait for a runtime's answer. The local probe
 * comes first, so a machine with its services never loads testcontainers nor waits for a runtime.
 */
export async function chooseTestServices(env: Record<string, string | undefined>): Promise<TestServices> {
  const forced = env.TEST_SERVICES || undefined;
  if (forced !== undefined && forced !== 'local' && forced !== 'containers') {
    throw new Error(`TEST_SERVICES is "${forced}"; it may be local or containers`);
  }
  let silent = '';
  if (forced !== 'containers') {
    const missing = await silentServices(env);
    if (missing.length === 0) return 'local';
    silent = describeSilent(missing);
    if (forced === 'local') throw new NoTestServices(`TEST_SERVICES=local, and ${silent}`);
  }
  const problem = await containerRuntimeProblem(env.TEST_RUNTIME_TIMEOUT || '10s');
  if (problem === undefined) return 'containers';
  const runtime = `no container runtime answers (DOCKER_HOST=${env.DOCKER_HOST ?? 'unset'}: ${problem})`;
  throw new NoTestServices(
    forced === 'containers' ? `TEST_SERVICES=containers, and ${runtime}` : `${silent}, and ${runtime}`,
  );
}
