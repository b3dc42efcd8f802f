#!/usr/bin/env bash
# Installs the newest client majors for the end-to-end tests. They need Node 22 (the project itself runs
# on Node 20), so Node 22 comes from the npm registry first (the `node` package ships the binary, in
# runtime/), then the clients install and later run under it. Both from their lockfiles; skipped when
# the lockfiles have not changed since the last install. Called by test/global-setup.ts and .ci/run.
set -euo pipefail
cd "$(dirname "$0")"

stamp_file=node_modules/.ctxgate-installed
stamp=$(cat runtime/package-lock.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] && [ -x runtime/node_modules/.bin/node ]; then
  exit 0
fi

(cd runtime && npm ci --no-audit --no-fund --loglevel=error)
PATH="$PWD/runtime/node_modules/.bin:$PATH" npm ci --no-audit --no-fund --loglevel=error
echo "$stamp" >"$stamp_file"
echo "test clients installed under $(runtime/node_modules/.bin/node --version)"
