#!/usr/bin/env bash
# Brings the project's own Node 24 and pnpm 10 into .toolchain/ when the machine's Node is older,
# then puts them first on PATH. Source it: `. scripts/toolchain.sh`.
# Why a project-local prefix: the machine's Node (20) is end of life and our dependencies refuse it;
# corepack fails its signature check against this registry, so pnpm comes from npm as well.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
want_major=24
have_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(have_major)" != "$want_major" ]; then
  if [ ! -x "$root/.toolchain/node_modules/node/bin/node" ] || [ ! -x "$root/.toolchain/node_modules/.bin/pnpm" ]; then
    echo "toolchain: installing Node $want_major and pnpm 10 into .toolchain/" >&2
    npm install --silent --no-audit --no-fund --prefix "$root/.toolchain" "node@$want_major" "pnpm@10" >&2
  fi
  export PATH="$root/.toolchain/node_modules/node/bin:$root/.toolchain/node_modules/.bin:$PATH"
elif ! command -v pnpm >/dev/null 2>&1; then
  npm install --silent --no-audit --no-fund --prefix "$root/.toolchain" "pnpm@10" >&2
  export PATH="$root/.toolchain/node_modules/.bin:$PATH"
fi
set +euo pipefail
