#!/usr/bin/env bash
# docs/webhooks.md's receivers in other languages run against real deliveries
# (services/dispatcher/test/recipes.test.ts) with Debian's interpreters: python3 (package python3),
# php (php-cli), ruby (ruby) and go (golang-go). Installs those missing.
# Where they cannot be installed (not root, or no apt-get, as on a laptop): in CI (.ci/run sets CI)
# that fails the run, as the recipes would go untested; elsewhere it says, one line each, which
# recipe skips and which package brings its interpreter, prints the missing interpreters on stdout
# and exits 3, on which scripts/test.sh sets SKIP_RECIPES to them for jest.
set -euo pipefail
declare -A package=([python3]=python3 [php]=php-cli [ruby]=ruby [go]=golang-go)
missing=()
for interpreter in python3 php ruby go; do
  command -v "$interpreter" >/dev/null || missing+=("$interpreter")
done
[ ${#missing[@]} = 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  if [ -n "${CI:-}" ] && [ "$CI" != false ] && [ "$CI" != 0 ]; then
    for interpreter in "${missing[@]}"; do
      echo "interpreters: $interpreter is missing, and CI never skips the recipes' tests: install Debian's ${package[$interpreter]} (apt-get install ${package[$interpreter]}, as root)" >&2
    done
    exit 1
  fi
  for interpreter in "${missing[@]}"; do
    echo "interpreters: $interpreter is missing, so services/dispatcher/test/recipes.test.ts skips the $interpreter recipe; to run it, install Debian's ${package[$interpreter]} (apt-get install ${package[$interpreter]}, as root)" >&2
  done
  echo "${missing[*]}"
  exit 3
fi
packages=()
for interpreter in "${missing[@]}"; do packages+=("${package[$interpreter]}"); done
echo "interpreters: installing Debian's ${packages[*]} (for the recipes of docs/webhooks.md)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
