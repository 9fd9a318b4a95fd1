#!/usr/bin/env bash
# Consumer test: pack alkstore as npm would publish it, install the tarball
# into a fresh Nest 12 application in a temp dir (its own package.json),
# compile it with tsc, boot it on SQLite and see an outbox message and a queue
# job handled. Also checks the tarball's contents and that the types resolve
# under nodenext, bundler and node10. Exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/test/consumer"
work="$(mktemp -d "${TMPDIR:-/tmp}/alkstore-consumer.XXXXXX")"
if [ "${ALKSTORE_CONSUMER_KEEP:-0}" = 1 ]; then echo "-- consumer: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
t0=$SECONDS
step() { echo "-- consumer: $1 ($((SECONDS - t0)) s)"; }

step "npm pack"
tarball="$(cd "$root" && npm pack --pack-destination "$work" --silent | tail -1)"
mkdir "$work/extracted"
tar -xzf "$work/$tarball" -C "$work/extracted"
node "$here/check-tarball.mjs" "$work/extracted/package"

step "install the tarball into a scratch Nest 12 app"
cp -R "$here/app" "$work/app"
# better-sqlite3's install script (prebuild-install) looks for a local
# prebuild before downloading one; offer the binary this checkout already
# built, so a machine without access to GitHub releases does not compile
# SQLite again. Another version, ABI or platform ignores it and builds.
prebuilt="$root/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
if [ -f "$prebuilt" ]; then
  mkdir -p "$work/prebuilds/build/Release"
  cp "$prebuilt" "$work/prebuilds/build/Release/"
  bsver="$(node -p "require('$root/node_modules/better-sqlite3/package.json').version")"
  abi="$(node -p 'process.versions.modules + "-" + process.platform + "-" + process.arch')"
  tar -czf "$work/prebuilds/better-sqlite3-v$bsver-node-v$abi.tar.gz" -C "$work/prebuilds" build
fi
cd "$work/app"
npm_config_better_sqlite3_local_prebuilds="$work/prebuilds" npm install --prefer-offline --no-audit --no-fund --loglevel=error "$work/$tarball" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
grep -q '"alkstore": "file:' package.json || { echo "the tarball was not recorded as a dependency"; exit 1; }

step "tsc"
npx --no-install tsc -p tsconfig.json

step "types resolve under nodenext, bundler and node10"
node "$here/write-types-check.mjs" "$work/app"
for mode in nodenext bundler node10; do
  npx --no-install tsc -p "types-$mode/tsconfig.json" || { echo "types do not resolve under moduleResolution $mode"; exit 1; }
done

step "boot on SQLite"
out="$(APP_DB="$work/app/app.db" timeout 60 node dist/main.js 2>&1)" || { echo "$out"; echo "the consumer app failed"; exit 1; }
echo "$out" | sed 's/^/   app: /'
echo "$out" | grep -q '^outbox message handled: order 1$' || { echo "no outbox message was handled"; exit 1; }
echo "$out" | grep -q '^queue job handled: email to ada@example.com for order 1$' || { echo "no queue job was handled"; exit 1; }
echo "$out" | grep -q '^engine: sqlite$' || { echo "the store did not run on SQLite"; exit 1; }

step "passed"
