# Where start.sh finds PostgreSQL, RabbitMQ and Redis: at DATABASE_URL, AMQP_URL and REDIS_URL when
# they answer (this machine's; scripts/services.sh starts Debian's), else docker compose's, from
# docker-compose.yml, with mailpit for the owners' e-mails. Our services run from the checkout
# either way. Sourced by start.sh once the URLs are set; sets $infrastructure for its banner.
silent_lines=$(node scripts/silent-services.ts)
silent=$(sed -n 1p <<<"$silent_lines")
silent_sentence=$(sed -n 2p <<<"$silent_lines")
if [ -z "$silent" ]; then
  infrastructure="this machine's PostgreSQL, RabbitMQ and Redis"
elif docker info >/dev/null 2>&1; then
  echo "start: $silent_sentence; starting $silent and mailpit with docker compose" >&2
  # shellcheck disable=SC2086 # one word per compose service
  docker compose up --detach --wait $silent mailpit
  export SMTP_URL="${SMTP_URL:-smtp://127.0.0.1:1025}"
  infrastructure="docker compose's $silent mailpit (e-mails on http://localhost:8025; 'docker compose stop' stops them)"
else
  cat >&2 <<MESSAGE
start: $silent_sentence, and Docker does not either (docker info failed).
Either start PostgreSQL, RabbitMQ and Redis (on Debian \`bash scripts/services.sh\`), or start Docker,
and start.sh runs them with docker compose (docs/operations.md, "On a laptop").
MESSAGE
  exit 1
fi
