#!/bin/sh
# Runs one node test file of tests/server; exit 77 (skipped) when node or the npm packages
# (scripts/install-deps.sh: npm ci --prefix tests/server) are missing, or, with --needs-chromium
# first, when Debian's chromium is.
dir=$(dirname "$0")
if [ "$1" = "--needs-chromium" ]; then
  shift
  [ -x /usr/bin/chromium ] || { echo "/usr/bin/chromium missing (run scripts/install-deps.sh): skipped"; exit 77; }
fi
command -v node >/dev/null 2>&1 || { echo "node not found: skipped"; exit 77; }
[ -d "$dir/node_modules/openai" ] && [ -d "$dir/node_modules/puppeteer-core" ] ||
  { echo "tests/server/node_modules missing (run scripts/install-deps.sh): skipped"; exit 77; }
exec node --test --test-reporter=spec "$@"
