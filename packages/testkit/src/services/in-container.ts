// What the fault tests do to a service when it runs in one of the run's containers (run.ts puts
// their ids in TEST_POSTGRES_CONTAINER and TEST_RABBITMQ_CONTAINER) instead of on this machine.
async function container(id: string) {
  const { getContainerRuntimeClient } = await import('testcontainers');
  const client = await getContainerRuntimeClient();
  return { client: client.container, container: client.container.getById(id) };
}

/** Runs a command in the container and fails with its output when it fails. */
export async function execInContainer(id: string, command: string[]): Promise<void> {
  const { client, container: target } = await container(id);
  const { exitCode, output } = await client.exec(target, command);
  if (exitCode !== 0)
    throw new Error(`${command.join(' ')} failed in container ${id} (${exitCode}): ${output}`);
}

/**
 * Stops the container (its image's stop signal: a fast shutdown for PostgreSQL) and answers the
 * function that starts it again; its host port is fixed (containers.ts), so its URL stays right.
 */
export async function stopContainer(id: string): Promise<() => Promise<void>> {
  const { client, container: target } = await container(id);
  await client.stop(target, { timeout: 30_000 });
  return () => client.start(target);
}
