#!/bin/sh
# Runs one node test file of tests/server; exit 77 (skipped) when node or the npm packages
# (scripts/install-deps.sh: npm ci --prefix tests/server) are missing.
dir=$(dirname "$0")
command -v node >/dev/null 2>&1 || { echo "node not found: skipped"; exit 77; }
[ -d "$dir/node_modules/openai" ] || { echo "tests/server/node_modules missing (run scripts/install-deps.sh): skipped"; exit 77; }
exec node --test --test-reporter=spec "$@"
