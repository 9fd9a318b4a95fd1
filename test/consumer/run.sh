#!/usr/bin/env bash
# Consumer test: pack nestjs-alkstore as npm would publish it, install the tarball
# into a fresh Nest 12 application in a temp dir (its own package.json),
# compile it with tsc, boot it on SQLite and see an outbox message and a queue
# job handled. Also checks the tarball's contents and that the types resolve
# under nodenext, bundler and node10. Then the way a new user meets it: the app
# `nest new` generates (ESM, TypeScript 6, vitest; checked in as nest-app/)
# gets the tarball and the README's peers, the README's Nest block pasted as
# src/app.module.ts, `nest build`, a boot of dist/main.js, and a vitest test
# that calls the block's service. Runs on whatever `node` is first on PATH
# (.ci/run calls it once per Node version). Exits non-zero on any failure.
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
node "$here/check-tarball.mjs" "$work/extracted/package" "$work/$tarball"

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

# --nest-new-only (.ci/run on the extra Node versions): the tarball's contents and its types do not
# depend on the Node version, so only the generated app below runs there.
if [ "${1:-}" != "--nest-new-only" ]; then
step "install the tarball into a scratch Nest 12 app"
cp -R "$here/app" "$work/app"
cd "$work/app"
npm_config_better_sqlite3_local_prebuilds="$work/prebuilds" npm install --prefer-offline --no-audit --no-fund --loglevel=error "$work/$tarball" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
grep -q '"nestjs-alkstore": "file:' package.json || { echo "the tarball was not recorded as a dependency"; exit 1; }

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

fi

step "nest new app ($(node -v)): install the tarball and the README's peers"
cp -R "$here/nest-app" "$work/nest-app"
cd "$work/nest-app"
# Exactly the install line the README prints above its Nest block, the package's own name
# replaced by the tarball.
pkgname="$(node -p "require('$root/package.json').name")"
readme_install="$(awk '/^## With NestJS/{s=1} s && /^npm install /{print; exit}' "$root/README.md")"
[ -n "$readme_install" ] || { echo "README.md has no npm install line under \"## With NestJS\""; exit 1; }
echo "   README: $readme_install"
read -r -a readme_pkgs <<<"${readme_install#npm install }"
install_args=()
for p in "${readme_pkgs[@]}"; do
  if [ "$p" = "$pkgname" ]; then install_args+=("$work/$tarball"); else install_args+=("$p"); fi
done
[[ " ${install_args[*]} " == *" $work/$tarball "* ]] || { echo "the README's install line does not install $pkgname"; exit 1; }
npm_config_better_sqlite3_local_prebuilds="$work/prebuilds" npm install --prefer-offline --no-audit --no-fund --loglevel=error \
  "${install_args[@]}" >"$work/nest-install.log" 2>&1 || { cat "$work/nest-install.log"; exit 1; }

step "paste the README's Nest block as src/app.module.ts; nest build"
node "$here/readme-nest-block.mjs" "$root/README.md" >src/app.module.ts
npm run --silent build

step "boot dist/main.js"
boot_log="$work/nest-boot.log"
PORT=0 node dist/main.js >"$boot_log" 2>&1 &
boot_pid=$!
booted=0
for _ in $(seq 1 300); do
  if grep -q 'Nest application successfully started' "$boot_log"; then booted=1; break; fi
  kill -0 "$boot_pid" 2>/dev/null || break
  sleep 0.1
done
kill "$boot_pid" 2>/dev/null || true
wait "$boot_pid" 2>/dev/null || true
sed 's/^/   boot: /' "$boot_log" | tail -20
[ "$booted" = 1 ] || { echo "the README's Nest block did not boot within 30 s"; exit 1; }

step "vitest: the README block's service, outbox handler and queue handler"
npx --no-install vitest run

step "passed"
