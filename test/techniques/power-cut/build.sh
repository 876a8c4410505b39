#!/bin/sh
# Builds test/techniques/power-cut/power-cut-fs.c (the power-cut file system of the power-cut tests) into
# the directory given (default: node_modules/.cache/power-cut-fs). Needs Debian's libfuse3-dev and
# fuse3 (scripts/install-test-deps.sh). Builds only when the binary is missing: the tests pass a
# directory named by the source's hash.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../../node_modules/.cache/power-cut-fs"}
mkdir -p "$out"
bin="$out/power-cut-fs"
if [ ! -x "$bin" ]; then
  # shellcheck disable=SC2046 # pkg-config prints flags to be split
  cc -O2 -Wall -Wextra -Werror -o "$bin.$$" "$here/power-cut-fs.c" $(pkg-config --cflags --libs fuse3)
  mv "$bin.$$" "$bin"
fi
echo "$bin"
