# This machine's PostgreSQL, RabbitMQ and Redis, as scripts/services.sh starts them: the addresses
# scripts/start.sh and `pnpm tripctl` use unless the environment already names others. Sourced by
# sh as well as bash (pnpm runs package scripts with sh), so POSIX only.
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/trips}"
export AMQP_URL="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
