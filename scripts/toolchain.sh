#!/usr/bin/env bash
# Brings the project's own Node 24 and pnpm 10 into .toolchain/ when the machine's Node is older,
# then puts them first on PATH. Source it: `. scripts/toolchain.sh`.
# Why a project-local prefix: the machine's Node (20) is end of life and our dependencies refuse it;
# corepack fails its signature check against this registry, so pnpm comes from npm as well.
# It is sourced into the caller's shell, so it leaves the caller's options (set -e …) untouched
# and reports failure by its return status instead.
toolchain_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
toolchain_node_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(toolchain_node_major)" != "24" ]; then
  if [ ! -x "$toolchain_root/.toolchain/node_modules/node/bin/node" ] || [ ! -x "$toolchain_root/.toolchain/node_modules/.bin/pnpm" ]; then
    echo "toolchain: installing Node 24 and pnpm 10 into .toolchain/" >&2
    npm install --silent --no-audit --no-fund --prefix "$toolchain_root/.toolchain" "node@24" "pnpm@10" >&2 ||
      { echo "toolchain: could not install Node 24 from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export PATH="$toolchain_root/.toolchain/node_modules/node/bin:$toolchain_root/.toolchain/node_modules/.bin:$PATH"
elif ! command -v pnpm >/dev/null 2>&1; then
  npm install --silent --no-audit --no-fund --prefix "$toolchain_root/.toolchain" "pnpm@10" >&2 ||
    { echo "toolchain: could not install pnpm" >&2; return 1 2>/dev/null || exit 1; }
  export PATH="$toolchain_root/.toolchain/node_modules/.bin:$PATH"
fi
unset -f toolchain_node_major
unset toolchain_root
