// For scripts/infrastructure.sh: which of PostgreSQL, RabbitMQ and Redis do not answer at
// DATABASE_URL, AMQP_URL and REDIS_URL. Two lines, their docker-compose.yml services and a
// sentence naming them; nothing when all three answer.
import { describeSilent, silentServices } from '../packages/testkit/src/services/probe.ts';

const silent = await silentServices(process.env);
if (silent.length > 0) {
  console.log(silent.map(({ service }) => service.compose).join(' '));
  console.log(describeSilent(silent));
}
