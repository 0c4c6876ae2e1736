#!/bin/sh
# Run by the package scripts that start our TypeScript sources (`pnpm tripctl`, `pnpm trips`): on a
# Node other than 24, one line saying what to do and exit 1, instead of a syntax error from a Node
# that cannot strip types. POSIX sh, as pnpm runs package scripts with sh.
# Usage: sh scripts/check-node.sh <command name>
case "$(node --version 2>/dev/null)" in
  v24.*) exit 0 ;;
esac
echo "$1 runs on Node 24, and this shell's node is $(node --version 2>/dev/null || echo 'not installed'): run \`. scripts/toolchain.sh\` first, which puts the project's Node 24 and pnpm on PATH." >&2
exit 1
