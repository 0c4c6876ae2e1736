/**
 * The images the tests run in containers when this machine has no PostgreSQL, RabbitMQ or Redis of
 * its own (docs/design/test-services.md). The versions are the ones the platform supports and
 * docker-compose.yml runs; RabbitMQ without the management plugin, which the tests never use.
 * test/deploy/compose.test.ts keeps them in step with docker-compose.yml.
 */
export const testImages = {
  postgres: 'postgres:15',
  rabbitmq: 'rabbitmq:4.3.5',
  redis: 'redis:7',
} as const;
