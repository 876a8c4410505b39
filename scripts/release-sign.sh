#!/usr/bin/env bash
# Signs a release directory made by scripts/release.sh: SHA256SUMS over its artefacts and its
# minisign signature (prehashed, the only kind vendgate-update accepts), whose signed "trusted
# comment" names the version and every artefact:  vendgate version=<V> files=<name>,<name>,…
# A device checks both before it installs anything (scripts/install-pi.sh, verify_artefact).
#
#   bash scripts/release-sign.sh [--key FILE] DIR
#
#   --key FILE  the minisign secret key [$VENDGATE_RELEASE_KEY, else ~/.minisign/minisign.key]
#   DIR         the --out of release.sh: vendgate_<V>_<arch>.deb and vendgate-<V>-linux-<arch>.tar.gz,
#               all of one version
#
# It runs sha256sum and minisign only (Debian packages): nothing downloaded, nothing from the release
# is executed, so it can run on the machine that holds the key while the build ran elsewhere.

set -Eeuo pipefail
die() { printf 'release-sign.sh: error: %s\n' "$*" >&2; exit 1; }
KEY="${VENDGATE_RELEASE_KEY:-${HOME:-/root}/.minisign/minisign.key}"
DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --key) KEY="${2:?--key needs a minisign secret key file}"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$DIR" ] || die "one directory at a time"; DIR="$1"; shift ;;
  esac
done
if [ -z "$DIR" ] || [ ! -d "$DIR" ]; then die "name the release directory (see --help)"; fi
[ -f "$KEY" ] || die "no minisign secret key at $KEY (--key)"
command -v minisign > /dev/null || die "minisign is missing: sudo apt-get install minisign"

version=""
files=()
while IFS= read -r name; do
  case "$name" in
    vendgate_*_amd64.deb | vendgate_*_arm64.deb) v="${name#vendgate_}"; v="${v%_*.deb}" ;;
    vendgate-*-linux-x64.tar.gz | vendgate-*-linux-arm64.tar.gz) v="${name#vendgate-}"; v="${v%-linux-*.tar.gz}" ;;
    *) continue ;;
  esac
  [ -z "$version" ] || [ "$version" = "$v" ] || die "$DIR holds two versions ($version and $v): one release at a time"
  version="$v"
  files+=("$name")
done < <(find "$DIR" -maxdepth 1 -type f \( -name 'vendgate_*.deb' -o -name 'vendgate-*-linux-*.tar.gz' \) -printf '%f\n' | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || die "no vendgate artefacts in $DIR"

(cd "$DIR" && sha256sum -- "${files[@]}" > SHA256SUMS.new && mv -f SHA256SUMS.new SHA256SUMS)
rm -f "$DIR/SHA256SUMS.minisig"
comment="vendgate version=$version files=$(IFS=,; printf '%s' "${files[*]}")"
minisign -S -s "$KEY" -m "$DIR/SHA256SUMS" -x "$DIR/SHA256SUMS.minisig" -t "$comment" > /dev/null
printf '    signed: %s\n' "$comment"
