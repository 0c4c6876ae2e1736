#!/usr/bin/env bash
# Every test file, or the ones named: scripts/test.sh runs this once it knows where the services are.
set -euo pipefail
cd "$(dirname "$0")/.."

paths=()
for arg in "$@"; do [[ "$arg" == -* ]] || paths+=("$arg"); done
if [ ${#paths[@]} -gt 0 ]; then exec pnpm test "$@"; fi

# Files named *.serial.test.ts start RabbitMQ nodes or Postgres servers of their own (to restart
# them; never the machine's) or many processes: their load would disturb the timing of files
# running beside them, so they run after the rest, one at a time.
results=$(mktemp -d)
status=0
pnpm test "$@" --testPathIgnorePatterns='\.serial\.test\.ts$' --json --outputFile="$results/parallel.json" || status=$?
pnpm test "$@" --runInBand --passWithNoTests --testPathPatterns='\.serial\.test\.ts$' --json --outputFile="$results/serial.json" || status=$?
node -e '
  const files = process.argv.slice(1).map((f) => { try { return require(f); } catch { return {}; } });
  const sum = (k) => files.reduce((n, r) => n + (r[k] ?? 0), 0);
  console.log(`tests: ${sum("numPassedTests")} passed, ${sum("numFailedTests")} failed, ${sum("numPendingTests")} skipped`);
' "$results/parallel.json" "$results/serial.json"
rm -rf "$results"
exit $status
