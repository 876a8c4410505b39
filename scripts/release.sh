#!/usr/bin/env bash
# Makes the release artefacts under release/: for linux-x64 and linux-arm64 (Raspberry
# Pi OS 64-bit) a Debian package and a tarball with the same contents, SHA256SUMS over them and its
# minisign signature.
#
#   npm run release                      (= bash scripts/release.sh)
#   bash scripts/release.sh [--arch x64|arm64]... [--key FILE] [--out DIR] [--version V] [--no-sign]
#
#   --arch ARCH   build only this architecture (repeatable; default: x64 and arm64)
#   --key FILE    the minisign secret key that signs SHA256SUMS [$VENDGATE_RELEASE_KEY, else
#                 ~/.minisign/minisign.key]; its public key (FILE with .pub for .key, or
#                 $VENDGATE_RELEASE_PUBKEY) goes into the package, so the device checks the next
#                 update against the key it was installed with
#   --pubkey FILE the public key to put in the package, without a secret key here (with --no-sign)
#   --out DIR     where the artefacts go [release/]; only release.sh's own files there are replaced
#                 (vendgate_*.deb, vendgate-*-linux-*.tar.gz, SHA256SUMS*, release-key.pub, .work/)
#   --version V   the release's version [package.json's version + "+" + the commit's UTC time and
#                 hash, e.g. 0.1.0+20261204193012.g1a2b3c4d5e6f: every commit its own, later sorts higher]
#   --no-sign     build only; sign later with scripts/release-sign.sh (on the machine with the key)
#   --skip-build  use dist/ as it is, after checking it was built from the src/ of now (tests)
#   --fast-compression  xz preset 1 for the .debs, gzip -1 for the tarballs: the same formats, a fifth
#                 of the compressing time, a larger file (tests; a release you ship keeps the defaults)
#
# Each artefact holds one release directory (the .deb under /usr/lib/vendgate/release):
#   dist/            the bundle (dist/vendgate.js) and what it reads at run time (migrations, kiosk page)
#   node_modules/    what the bundle loads at run time (scripts/release-prune.mjs: pino-pretty, the
#                    native addons and their dependencies); the native ones (better-sqlite3,
#                    @serialport/bindings-cpp, epoll for onoff) compiled here for the target from source,
#                    against the headers of the pinned Node; arm64 with Debian's aarch64-linux-gnu compilers
#   node/bin/node    the Node runtime the service and the CLI run on: scripts/node-runtime.lock pins its
#                    version and the sha512 of the npm tarball (node-linux-<arch>), checked before use
#   config/ systemd/ docs/ scripts/{install-pi,update,package-postinst}.sh  package.json  RELEASE
# The native modules are built for that Node only (better-sqlite3 and epoll use V8's own API), and
# the release carries it: the .deb depends only on Debian packages and no nodejs is needed on the Pi.
# Signing is a step of its own (scripts/release-sign.sh: sha256sum and minisign, nothing downloaded).
# When this run signs, the downloaded Node is never run here (no load check of the addons): build with
# --no-sign on a build machine to have that check, then sign the directory where the key is.
#
# Needs: node, npm, dpkg-deb, minisign, make, g++ and, for arm64, g++-aarch64-linux-gnu (Debian
# packages; scripts/install-test-deps.sh installs them). The Node runtime comes from the npm registry.

set -Eeuo pipefail
CALLER_DIR="$(pwd)"
cd "$(dirname "$0")/.."
ROOT_DIR="$(pwd)"
die() { printf 'release.sh: error: %s\n' "$*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

ARCHES=()
SKIP_BUILD=0
SIGN=1
# dpkg-deb's own xz level (6) and tar's gzip (6) unless --fast-compression.
DEB_LEVEL=()
TAR_GZIP=(gzip)
VERSION=""
PUBKEY_ARG=""
OUT="$ROOT_DIR/release"
KEY="${VENDGATE_RELEASE_KEY:-${HOME:-/root}/.minisign/minisign.key}"
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) case "${2:-}" in x64|arm64) ARCHES+=("$2") ;; *) die "--arch takes x64 or arm64, not '${2:-}'" ;; esac; shift 2 ;;
    --key) KEY="${2:?--key needs a minisign secret key file}"; shift 2 ;;
    --out) OUT="${2:?--out needs a directory}"; shift 2 ;;
    --pubkey) PUBKEY_ARG="${2:?--pubkey needs a minisign public key file}"; shift 2 ;;
    --version) VERSION="${2:?--version needs a version, e.g. 0.2.0}"; shift 2 ;;
    --no-sign) SIGN=0; shift ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --fast-compression) DEB_LEVEL=(-z1); TAR_GZIP=(gzip -1); shift ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ ${#ARCHES[@]} -gt 0 ] || ARCHES=(x64 arm64)
case "$OUT" in /*) ;; *) OUT="$CALLER_DIR/$OUT" ;; esac
PUBKEY="${PUBKEY_ARG:-${VENDGATE_RELEASE_PUBKEY:-${KEY%.key}.pub}}"
[ "$SIGN" = 0 ] || [ -f "$KEY" ] || die "no minisign secret key at $KEY: make one with 'minisign -G -s $KEY -p ${KEY%.key}.pub' (docs/install.md, Making a release) or pass --key"
[ -f "$PUBKEY" ] || die "no public key at $PUBKEY beside the secret key: set VENDGATE_RELEASE_PUBKEY"
for tool in dpkg-deb minisign make g++ sha256sum; do
  command -v "$tool" > /dev/null || die "$tool is missing: sudo bash scripts/install-test-deps.sh"
done

COMMIT="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "$COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then COMMIT="$COMMIT-dirty"; fi
# Reproducible archives: every file dated from the commit, not from this build.
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH
# Every build its own version, later builds higher (dpkg --compare-versions): the commit's time and
# hash after package.json's version; a build of uncommitted changes is dated now and says so.
if [ -z "$VERSION" ]; then
  VERSION="$(node -p 'require("./package.json").version')"
  case "$COMMIT" in
    unknown) VERSION="$VERSION+$(date -u +%Y%m%d%H%M%S)" ;;
    *-dirty) VERSION="$VERSION+$(date -u +%Y%m%d%H%M%S).g${COMMIT%-dirty}.dirty" ;;
    *) VERSION="$VERSION+$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S).g$COMMIT" ;;
  esac
fi
[[ "$VERSION" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "--version $VERSION: digits first, then letters, digits and . + ~ only (a Debian version without a revision)"
# The pinned Node runtime (scripts/node-runtime.lock, read as data).
lock_value() { awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2); exit }' scripts/node-runtime.lock; }
NODE_RUNTIME_VERSION="$(lock_value version)"
[[ "$NODE_RUNTIME_VERSION" =~ ^22\.[0-9]+\.[0-9]+$ ]] || die "scripts/node-runtime.lock: version '$NODE_RUNTIME_VERSION' is not an exact Node 22 version"
WORK="$OUT/.work"
NODE_GYP="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/node_modules/node-gyp/bin/node-gyp.js"
[ -f "$NODE_GYP" ] || die "node-gyp (bundled with npm) not found at $NODE_GYP"

# A fresh release each time; only the downloaded Node packages are kept in .work. --out may name
# any directory (a home, a share): only the files release.sh makes are deleted there, and a .work
# it did not make (no .release-sh marker) is refused, not emptied.
if [ -d "$WORK" ] && [ ! -f "$WORK/.release-sh" ] && [ "$OUT" != "$ROOT_DIR/release" ]; then
  die "$WORK exists and was not made by release.sh: choose another --out, or remove it"
fi
mkdir -p "$WORK"
: > "$WORK/.release-sh"
rm -f "$OUT"/vendgate_*.deb "$OUT"/vendgate-*-linux-*.tar.gz "$OUT/SHA256SUMS" "$OUT/SHA256SUMS.minisig" "$OUT/release-key.pub"
find "$WORK" -mindepth 1 -maxdepth 1 ! -name 'node-*' ! -name .release-sh -exec rm -rf {} +

if [ "$SKIP_BUILD" = 1 ]; then
  node scripts/build-stamp.mjs --check || die "--skip-build: dist/ is not built from the src/ of now: npm run build"
else
  step "Building dist/ (tsc, assets, bundle) at commit $COMMIT"
  VENDGATE_BUILD_COMMIT="$COMMIT" npm run build --silent
fi

# The pinned Node runtime of the target (headers to compile against, the binary to ship): the npm
# tarball node-linux-<arch>@<version> is checked against its sha512 in scripts/node-runtime.lock
# before it is unpacked; a tarball that does not match is deleted and the build stops.
node_home() {
  local arch="$1" dir tgz want have
  dir="$WORK/node-$arch-$NODE_RUNTIME_VERSION"
  tgz="$WORK/node-$arch-$NODE_RUNTIME_VERSION.tgz"
  want="$(lock_value "integrity.$arch")"
  [[ "$want" =~ ^sha512-[A-Za-z0-9+/]{86}==$ ]] || die "scripts/node-runtime.lock: no sha512 integrity for $arch"
  if [ ! -f "$tgz" ]; then
    (cd "$WORK" && npm pack --silent "node-linux-$arch@$NODE_RUNTIME_VERSION" > "node-$arch.pack") || die "could not fetch node-linux-$arch@$NODE_RUNTIME_VERSION from the npm registry"
    mv -f "$WORK/$(tail -n 1 "$WORK/node-$arch.pack")" "$tgz"
    rm -f "$WORK/node-$arch.pack"
  fi
  have="$(node -e 'process.stdout.write("sha512-" + require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$tgz")"
  if [ "$have" != "$want" ]; then
    rm -rf "$tgz" "$dir"
    die "node-linux-$arch@$NODE_RUNTIME_VERSION is not the tarball pinned in scripts/node-runtime.lock (expected $want, got $have): refusing it"
  fi
  if [ ! -f "$dir/.checked" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xzf "$tgz" -C "$dir" --strip-components=1 --no-same-owner
    printf '%s\n' "$want" > "$dir/.checked"
  fi
  printf '%s\n' "$dir"
}

# Compiles one native module in place for the target and leaves only the .node file of the build.
build_native() {
  local dir="$1" arch="$2" headers="$3"
  [ -d "$dir" ] || die "native module $dir is missing from the production dependencies"
  (
    cd "$dir"
    # npm exports its own settings to scripts (npm_config_nodedir=/usr under `npm run`): this
    # build's target wins over them, whatever started it.
    unset npm_config_target npm_config_runtime npm_config_disturl npm_config_dist_url
    export npm_config_nodedir="$headers" npm_config_arch="$arch" npm_config_target_arch="$arch"
    if [ "$arch" = arm64 ]; then
      export CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ LINK=aarch64-linux-gnu-g++ AR=aarch64-linux-gnu-ar
    fi
    JOBS="$(nproc)" node "$NODE_GYP" rebuild --release --arch="$arch" --nodedir="$headers" -j "$(nproc)" > "$WORK/gyp-$arch-$(basename "$dir").log" 2>&1 \
      || { tail -n 30 "$WORK/gyp-$arch-$(basename "$dir").log" >&2; exit 1; }
    find build -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
    find build/Release -mindepth 1 -maxdepth 1 ! -name '*.node' -exec rm -rf {} +
  ) || die "compiling $(basename "$dir") for $arch failed (log: $WORK/gyp-$arch-$(basename "$dir").log)"
  local elf
  elf="$(find "$dir/build/Release" -name '*.node' | head -n 1)"
  [ -n "$elf" ] || die "$dir: no .node file after the build"
  case "$arch:$(od -An -t x2 -j 18 -N 2 "$elf" | tr -d ' ')" in
    x64:003e|arm64:00b7) ;;
    *) die "$elf is not a $arch ELF file" ;;
  esac
}

# Each addon loaded by the target's own node (arm64 under qemu-aarch64 when it is installed): a module
# built against other headers fails here, not on a Pi.
load_check() {
  local arch="$1" headers="$2" dir="$3" runner=()
  if [ "$SIGN" = 1 ]; then
    printf '    linux-%s: this run signs, so the downloaded Node is not run here (build with --no-sign for the load check)\n' "$arch" >&2
    return 0
  fi
  if [ "$arch" = arm64 ]; then
    if ! command -v qemu-aarch64 > /dev/null; then
      printf '    linux-arm64: qemu-aarch64 not installed, the addons are not loaded here (only their ELF type is checked)\n' >&2
      return 0
    fi
    runner=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
  fi
  (cd "$dir" && "${runner[@]}" "$headers/bin/node" -e '
    const Database = require("better-sqlite3");
    new Database(":memory:").prepare("SELECT 1").get();
    require("epoll");
    require("@serialport/bindings-cpp");
  ') || die "linux-$arch: the native modules do not load on $("${runner[@]}" "$headers/bin/node" --version)"
  printf '    linux-%s: better-sqlite3, epoll and @serialport/bindings-cpp load on node %s\n' "$arch" "$("${runner[@]}" "$headers/bin/node" --version)" >&2
}

stage() {
  local arch="$1" headers="$2" dir
  dir="$WORK/vendgate-$VERSION-linux-$arch"
  install -d -m 0755 "$dir" "$dir/scripts"
  cp -R package.json package-lock.json dist config systemd docs "$dir/"
  cp scripts/install-pi.sh scripts/update.sh scripts/package-postinst.sh "$dir/scripts/"
  # The runtime the service and the CLI run on (only the binary and its licence: ~119 MB unpacked).
  install -d -m 0755 "$dir/node/bin"
  install -m 0755 "$headers/bin/node" "$dir/node/bin/node"
  install -m 0644 "$headers/LICENSE" "$dir/node/LICENSE"
  # The release's own version, wherever it is read (RELEASE, package.json, the directory's name).
  node -e 'const f=process.argv[1], p=JSON.parse(require("fs").readFileSync(f,"utf8")); p.version=process.argv[2]; require("fs").writeFileSync(f, JSON.stringify(p, null, 2) + "\n")' "$dir/package.json" "$VERSION"
  find "$dir/dist" -name '*.map' ! -name 'vendgate.js.map' -delete
  install -m 0644 "$PUBKEY" "$dir/config/release-key.pub"
  # The registry's tarballs, no install scripts: nothing is compiled for this machine by mistake.
  (cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) > /dev/null
  build_native "$dir/node_modules/better-sqlite3" "$arch" "$headers"
  build_native "$dir/node_modules/epoll" "$arch" "$headers"
  build_native "$dir/node_modules/@serialport/bindings-cpp" "$arch" "$headers"
  # Only what the bundle loads (the rest is inside dist/vendgate.js): ~47 → ~9 MB.
  node scripts/release-prune.mjs "$dir" >&2
  # dist/main.js, the unbundled entry, needs the packages just removed: the release runs the bundle only.
  rm -f "$dir/dist/main.js"
  # What is only needed to compile, and other platforms' prebuilt binaries.
  rm -rf "$dir/node_modules/better-sqlite3/deps" "$dir/node_modules/better-sqlite3/src" "$dir/node_modules/better-sqlite3/build/Release/test_extension.node" \
    "$dir/node_modules/@serialport/bindings-cpp/prebuilds" "$dir/node_modules/@serialport/bindings-cpp/src" \
    "$dir/node_modules/node-addon-api" "$dir/node_modules/nan" "$dir/node_modules/.package-lock.json"
  cat > "$dir/RELEASE" <<EOF
version=$VERSION
commit=$COMMIT
arch=linux-$arch
node=$NODE_RUNTIME_VERSION
node_integrity=$(lock_value "integrity.$arch")
node_module_version=$(awk '$1 == "#define" && $2 == "NODE_MODULE_VERSION" && $3 ~ /^[0-9]+$/ { print $3; exit }' "$headers/include/node/node_version.h")
EOF
  load_check "$arch" "$headers" "$dir"
  # Files root-owned and not writable by the service: 0644 / 0755.
  chmod -R u=rwX,go=rX "$dir"
  printf '%s\n' "$dir"
}

deb_arch() { case "$1" in x64) echo amd64 ;; arm64) echo arm64 ;; esac; }

make_deb() {
  local arch="$1" dir="$2" darch pkg
  darch="$(deb_arch "$arch")"
  pkg="$WORK/deb-$arch"
  rm -rf "$pkg"
  install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/lib/vendgate" "$pkg/usr/bin" "$pkg/usr/share/doc/vendgate"
  cp -a "$dir" "$pkg/usr/lib/vendgate/release"
  # The command on the PATH: the current release's own node, its code, the device's configuration and secrets.
  bash -c '. scripts/install-pi.sh && cli_script /opt/vendgate/current/node/bin/node /etc/vendgate /opt/vendgate' > "$pkg/usr/bin/vendgate"
  chmod 0755 "$pkg/usr/bin/vendgate"
  ln -s /usr/lib/vendgate/release/scripts/update.sh "$pkg/usr/bin/vendgate-update"
  cp docs/install.md "$pkg/usr/share/doc/vendgate/"
  local size
  size="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
  cat > "$pkg/DEBIAN/control" <<EOF
Package: vendgate
Version: $VERSION
Architecture: $darch
Maintainer: vendgate maintainers <vendgate@localhost>
Depends: systemd, passwd, minisign
Recommends: gpiod
Suggests: cloudflared, cage, chromium
Section: misc
Priority: optional
Installed-Size: $size
Description: payment gateway for vending machines and turnstiles
 Takes QR payments (sandbox, Gerege, QutPay), vends once per paid order and
 settles every payment. Runs as the systemd service vendgate under the user
 vendgate; configuration in /etc/vendgate, the database in /var/lib/vendgate.
 Then: /usr/share/doc/vendgate/install.md, the guided step (provider, tunnel).
EOF
  # dpkg runs these with their action and versions as arguments (Debian Policy, chapter 6): each
  # script receives them all, so "postinst configure <old-version>" reaches package-postinst.sh whole.
  cp scripts/package-maint/postinst scripts/package-maint/prerm scripts/package-maint/postrm "$pkg/DEBIAN/"
  chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/prerm" "$pkg/DEBIAN/postrm"
  find "$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zxz "${DEB_LEVEL[@]}" --build "$pkg" "$OUT/vendgate_${VERSION}_${darch}.deb" > /dev/null
}

make_tarball() {
  local arch="$1" dir="$2"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    --use-compress-program="${TAR_GZIP[*]}" -C "$WORK" -cf "$OUT/vendgate-$VERSION-linux-$arch.tar.gz" "$(basename "$dir")"
}

for arch in "${ARCHES[@]}"; do
  step "linux-$arch: Node $NODE_RUNTIME_VERSION (pinned), production dependencies, native modules"
  headers="$(node_home "$arch")"
  dir="$(stage "$arch" "$headers")"
  step "linux-$arch: $(basename "$dir").tar.gz and vendgate_${VERSION}_$(deb_arch "$arch").deb"
  make_tarball "$arch" "$dir"
  make_deb "$arch" "$dir"
done

cp "$PUBKEY" "$OUT/release-key.pub"
if [ "$SIGN" = 1 ]; then
  step "SHA256SUMS and its signature (scripts/release-sign.sh, $KEY)"
  bash scripts/release-sign.sh --key "$KEY" "$OUT"
else
  step "Not signed (--no-sign): on the machine with the key, bash scripts/release-sign.sh --key KEY $OUT"
fi
if [ -z "${VENDGATE_RELEASE_KEEP_WORK:-}" ]; then find "$WORK" -mindepth 1 -maxdepth 1 ! -name 'node-*' ! -name .release-sh -exec rm -rf {} +; fi
# Node runtimes of other versions than the pinned one.
find "$WORK" -mindepth 1 -maxdepth 1 -name 'node-*' ! -name "node-*-$NODE_RUNTIME_VERSION" ! -name "node-*-$NODE_RUNTIME_VERSION.tgz" -exec rm -rf {} +
step "Release $VERSION ($COMMIT) in $OUT"
find "$OUT" -maxdepth 1 -type f \( -name 'vendgate[-_]*' -o -name 'SHA256SUMS*' -o -name release-key.pub \) -printf '    %10s  %f\n' | sort -k 2
