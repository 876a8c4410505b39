#!/usr/bin/env bash
# Installs vendgate on Raspberry Pi OS: from a fresh system to a running, supervised service.
# Safe to run again: it never overwrites /etc/vendgate/config.yaml or secrets.env, and a re-run
# brings code, units and permissions back to what this version expects.
#
#   sudo scripts/install-pi.sh [--example NAME] [--kiosk] [--tunnel HOSTNAME] [--release FILE --key FILE]
#   sudo scripts/install-pi.sh --tunnel-only HOSTNAME
#
#   --example NAME     the config/examples/NAME.yaml written to /etc/vendgate/config.yaml when there is
#                      none yet (default: sandbox — starts without credentials or wiring)
#   --kiosk            also install cage + Chromium and enable vendgate-kiosk.service (the screen)
#   --tunnel HOSTNAME  also set up Cloudflare Tunnel for HOSTNAME, every step on this Pi: cloudflared
#                      from Cloudflare's Debian repository, login (open the URL it prints anywhere),
#                      the tunnel, its DNS route, /etc/vendgate/cloudflared.yml, vendgate-tunnel.service
#   --tunnel-only HOSTNAME  on an installed device, only the tunnel steps of --tunnel: no machine
#                      check, packages, release copy, units or restart (vendgate setup runs this, then
#                      restarts the service itself)
#   --release FILE     install from a release tarball (vendgate-<version>-linux-<arch>.tar.gz, with
#                      SHA256SUMS and SHA256SUMS.minisig beside it), checked before anything changes
#   --key FILE         the operator's minisign public key that --release is checked against; kept as
#                      /etc/vendgate/release-key.pub for updates (the .deb brings its own)
#
# Run it from a checkout (or an unpacked release) of vendgate. update.sh reuses its functions.
# For tests, every system path is placed under $VENDGATE_ROOT (default: the real root).

set -Eeuo pipefail

ROOT="${VENDGATE_ROOT:-}"
APP_DIR="$ROOT/opt/vendgate"
ETC_DIR="$ROOT/etc/vendgate"
STATE_DIR="$ROOT/var/lib/vendgate"
UNIT_DIR="$ROOT/etc/systemd/system"
BIN_DIR="$ROOT/usr/local/bin"
SERVICE_USER=vendgate
KIOSK_USER=vendgate-kiosk
NODE_MIN_MAJOR=20
NODE_RECOMMENDED_MAJOR=22
NODESOURCE_HINT="curl -fsSL https://deb.nodesource.com/setup_${NODE_RECOMMENDED_MAJOR}.x | sudo -E bash - && sudo apt-get install -y nodejs"

SCRIPT_NAME="$(basename "$0")"
step() { printf '\n==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
warn() { printf '    warning: %s\n' "$*" >&2; }
die() { printf '\n%s: error: %s\n' "$SCRIPT_NAME" "$*" >&2; exit 1; }
on_error() { die "stopped at line $1 (command: $2). Nothing after this step was done; fix the cause and run the script again."; }

# Fault injection for test/techniques/e2e/update-powercut.test.ts: the script dies here as in a power cut.
crash_point() {
  if [ "${VENDGATE_TEST_CRASH_AT:-}" = "$1" ]; then kill -KILL "$$" "$BASHPID"; fi
}

# The checkout this script belongs to.
source_dir() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

require_root() {
  if [ -z "$ROOT" ] && [ "$(id -u)" -ne 0 ]; then die "run as root: sudo $0 $*"; fi
}

check_machine() {
  step "Checking the machine"
  local model_file="$ROOT/proc/device-tree/model" model=""
  if [ -r "$model_file" ]; then model="$(tr -d '\0' < "$model_file")"; fi
  case "$model" in
    "Raspberry Pi"*) info "model: $model" ;;
    *)
      if [ "${VENDGATE_ALLOW_ANY_MACHINE:-}" = 1 ]; then
        warn "not a Raspberry Pi (${model:-no $model_file}); continuing because VENDGATE_ALLOW_ANY_MACHINE=1"
      else
        die "this is not a Raspberry Pi (${model:-no $model_file}). GPIO and serial settings assume one; set VENDGATE_ALLOW_ANY_MACHINE=1 to install anyway"
      fi ;;
  esac
  local os_id="" codename="" pretty=""
  if [ -r "$ROOT/etc/os-release" ]; then
    os_id="$(sed -n 's/^ID=//p' "$ROOT/etc/os-release" | tr -d '"')"
    codename="$(sed -n 's/^VERSION_CODENAME=//p' "$ROOT/etc/os-release" | tr -d '"')"
    pretty="$(sed -n 's/^PRETTY_NAME=//p' "$ROOT/etc/os-release" | tr -d '"')"
  fi
  case "$os_id" in
    debian|raspbian) info "os: ${pretty:-$os_id $codename}" ;;
    *) die "Raspberry Pi OS (Debian) is required; found ${pretty:-nothing in $ROOT/etc/os-release}" ;;
  esac
  case "$codename" in
    bookworm|trixie) ;;
    *) warn "tested on Raspberry Pi OS bookworm and trixie; this is '${codename:-unknown}'" ;;
  esac
  case "$(uname -m)" in
    aarch64|x86_64) ;;
    *) warn "a 32-bit system ($(uname -m)): use 64-bit Raspberry Pi OS, where Node ${NODE_RECOMMENDED_MAJOR} and the native modules have prebuilt binaries" ;;
  esac
}

# The node a release runs on: its own (node/bin/node: every release release.sh builds brings it; then
# the units and the command run $APP_DIR/current/node/bin/node, so each release runs on the node it
# was built for), else the system's (a checkout or an older release).
use_release_node() {
  local src="$1"
  if [ -x "$src/node/bin/node" ]; then
    step "Checking Node.js"
    NODE_BIN="$APP_DIR/current/node/bin/node"
    info "node: the release's own, $("$src/node/bin/node" --version) (runs as $NODE_BIN)"
    return 0
  fi
  check_node
}

check_node() {
  step "Checking Node.js"
  local node version major
  node="$(command -v node || true)"
  if [ -z "$node" ]; then die "Node.js is not installed. Node ${NODE_RECOMMENDED_MAJOR} LTS is recommended: $NODESOURCE_HINT"; fi
  version="$("$node" --version)"
  major="${version#v}"
  major="${major%%.*}"
  if [ "$major" -lt "$NODE_MIN_MAJOR" ]; then
    die "Node $version is too old (vendgate needs ${NODE_MIN_MAJOR} or newer; ${NODE_RECOMMENDED_MAJOR} recommended): $NODESOURCE_HINT"
  fi
  if [ "$major" -lt "$NODE_RECOMMENDED_MAJOR" ]; then
    warn "Node $version runs, but its line is past its end of life (no security fixes; vendgate supports 22 and 24), and on ${NODE_RECOMMENDED_MAJOR} the native modules install prebuilt: $NODESOURCE_HINT"
  fi
  NODE_BIN="$node"
  info "node: $NODE_BIN $version"
}

install_packages() {
  apt-get update -qq
  if [ -n "${RELEASE_ARTEFACT:-}" ] || [ -f "$(source_dir)/RELEASE" ]; then
    step "Installing libgpiod tools (the release brings its native modules built)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gpiod
  else
    step "Installing the build tools for native modules (better-sqlite3, serialport) and libgpiod tools"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3 gpiod
  fi
  if [ "${WITH_KIOSK:-0}" = 1 ]; then
    info "kiosk: cage and chromium"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cage chromium
  fi
}

create_users() {
  step "Creating the service user '$SERVICE_USER' (groups gpio, dialout) and directories"
  local group
  for group in gpio dialout; do
    getent group "$group" > /dev/null || groupadd --system "$group"
  done
  if getent passwd "$SERVICE_USER" > /dev/null; then
    info "user $SERVICE_USER exists"
  else
    useradd --system --user-group --home-dir /var/lib/vendgate --no-create-home --shell /usr/sbin/nologin "$SERVICE_USER"
  fi
  usermod -a -G gpio,dialout "$SERVICE_USER"
  if [ "${WITH_KIOSK:-0}" = 1 ]; then
    getent passwd "$KIOSK_USER" > /dev/null || useradd --system --user-group --create-home --shell /usr/sbin/nologin "$KIOSK_USER"
    usermod -a -G video,render,input "$KIOSK_USER"
  fi
  install -d -m 0755 "$APP_DIR" "$APP_DIR/releases" "$BIN_DIR" "$UNIT_DIR"
  install -d -m 0750 "$ETC_DIR" "$STATE_DIR"
  chown "root:$SERVICE_USER" "$ETC_DIR"
  chown "$SERVICE_USER:$SERVICE_USER" "$STATE_DIR"
}

# Checks an artefact before anything is touched: SHA256SUMS (beside it) signed by KEY (minisign),
# and the artefact's own hash listed there. Dies with what is wrong; changes nothing.
# The three files are first copied into a fresh directory only root can enter, and everything after
# (signature, checksum, unpacking, apt) uses those copies: whoever can write beside the artefact can
# not swap it after it was checked. Sets VERIFIED_ARTEFACT (the copy) and VERIFIED_VERSION (signed).
# The signature must be prehashed (minisign -H; release-sign.sh makes no other kind) and its signed
# comment must name this version and this artefact.
verify_artefact() {
  local artefact="$1" key="$2" dir name expected actual comment version work
  [ -f "$artefact" ] || die "no such artefact: $artefact"
  dir="$(cd "$(dirname "$artefact")" && pwd)"
  name="$(basename "$artefact")"
  case "$name" in
    vendgate_*_amd64.deb|vendgate_*_arm64.deb) version="${name#vendgate_}"; version="${version%_*.deb}" ;;
    vendgate-*-linux-x64.tar.gz|vendgate-*-linux-arm64.tar.gz) version="${name#vendgate-}"; version="${version%-linux-*.tar.gz}" ;;
    *) die "$name is not a vendgate release artefact (vendgate_<version>_<arch>.deb or vendgate-<version>-linux-<arch>.tar.gz)" ;;
  esac
  command -v minisign > /dev/null || die "minisign is needed to check the release signature: sudo apt-get install minisign"
  [ -f "$key" ] || die "no release key at $key: pass --key with the operator's public key (docs/install.md, Verifying a release)"
  [ -f "$dir/SHA256SUMS" ] || die "no SHA256SUMS beside $name: copy SHA256SUMS and SHA256SUMS.minisig from the release with it. Nothing was changed"
  [ -f "$dir/SHA256SUMS.minisig" ] || die "no SHA256SUMS.minisig beside $name: the release is unsigned. Nothing was changed"
  work="$(umask 077 && mktemp -d "${TMPDIR:-/tmp}/vendgate-verify.XXXXXX")"
  # shellcheck disable=SC2034 # used by update.sh, which sources this file
  VERIFY_DIR="$work"
  cp -- "$artefact" "$work/$name"
  cp -- "$dir/SHA256SUMS" "$work/SHA256SUMS"
  cp -- "$dir/SHA256SUMS.minisig" "$work/SHA256SUMS.minisig"
  chmod 0600 "$work/$name" "$work/SHA256SUMS" "$work/SHA256SUMS.minisig"
  if ! comment="$(minisign -V -H -p "$key" -m "$work/SHA256SUMS" -x "$work/SHA256SUMS.minisig" 2> /dev/null)"; then
    die "SHA256SUMS is not signed by the release key $key (altered, signed by someone else, or a legacy signature that is not prehashed): refusing $name. Nothing was changed"
  fi
  comment="$(printf '%s\n' "$comment" | sed -n 's/^Trusted comment: //p')"
  case "$comment" in
    "vendgate version=$version files="*) ;;
    *) die "the signed comment of SHA256SUMS ('$comment') is not for vendgate $version: refusing $name. Nothing was changed" ;;
  esac
  case ",${comment#*files=}," in
    *",$name,"*) ;;
    *) die "the signed comment of SHA256SUMS does not name $name: refusing it. Nothing was changed" ;;
  esac
  expected="$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1 }' "$work/SHA256SUMS")"
  [ -n "$expected" ] || die "$name is not listed in SHA256SUMS: refusing it. Nothing was changed"
  actual="$(sha256sum "$work/$name" | cut -d ' ' -f 1)"
  if [ "$actual" != "$expected" ]; then
    die "$name does not match its signed checksum (SHA256SUMS says $expected, the file is $actual): damaged or altered, refusing it. Nothing was changed"
  fi
  VERIFIED_ARTEFACT="$work/$name"
  VERIFIED_VERSION="$version"
  info "signature and checksum good: $name, version $version (key $(basename "$key"))"
}

# Unpacks a verified release tarball into a fresh directory under releases/.incoming and prints the
# release directory inside it.
unpack_tarball() {
  local tarball="$1" incoming top
  install -d -m 0755 "$APP_DIR/releases" "$APP_DIR/releases/.incoming"
  # What an earlier, interrupted update left.
  find "$APP_DIR/releases/.incoming" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  incoming="$(mktemp -d "$APP_DIR/releases/.incoming/unpack.XXXXXX")"
  tar -xzf "$tarball" -C "$incoming" --no-same-owner
  top="$(find "$incoming" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
  if [ -z "$top" ] || [ ! -f "$top/RELEASE" ]; then die "$(basename "$tarball") holds no release directory (no RELEASE file)"; fi
  if [ -n "${VERIFIED_VERSION:-}" ] && [ "$(sed -n 's/^version=//p' "$top/RELEASE")" != "$VERIFIED_VERSION" ]; then
    die "$(basename "$tarball") holds release $(sed -n 's/^version=//p' "$top/RELEASE"), not the signed $VERIFIED_VERSION: refusing it"
  fi
  printf '%s\n' "$top"
}

# A built release carries native modules for one Node major (RELEASE: node_module_version): refuse
# another node before anything changes, rather than a service that cannot open its database.
check_release_node() {
  local src="$1" wanted have
  [ -f "$src/RELEASE" ] || return 0
  [ ! -x "$src/node/bin/node" ] || return 0
  wanted="$(sed -n 's/^node_module_version=//p' "$src/RELEASE")"
  [ -n "$wanted" ] || return 0
  have="$("$NODE_BIN" -p process.versions.modules)"
  if [ "$wanted" != "$have" ]; then
    die "this release's native modules are built for Node $(sed -n 's/^node=//p' "$src/RELEASE") (module version $wanted), but $NODE_BIN is $("$NODE_BIN" --version) ($have): $NODESOURCE_HINT. Nothing was changed"
  fi
}

# Builds a release directory from a source tree and prints its path. Never touches `current`.
# The directory is complete and synced to disk before this returns: a power cut afterwards can
# not leave `current` pointing at half a release.
build_release() {
  local src="$1" version stamp dest n=1 tmp
  version="$(sed -n 's/^version=//p' "$src/RELEASE" 2> /dev/null || true)"
  [ -n "$version" ] || version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$src/package.json" | head -n 1)"
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  dest="$APP_DIR/releases/${version:-0}-$stamp"
  while [ -e "$dest" ]; do n=$((n + 1)); dest="$APP_DIR/releases/${version:-0}-$stamp-$n"; done
  # Built under a dot name, renamed when complete: a release directory without the dot is whole.
  tmp="$APP_DIR/releases/.$(basename "$dest").partial"
  # What an interrupted copy left (a power cut): never used, removed.
  find "$APP_DIR/releases" -mindepth 1 -maxdepth 1 -name '.*.partial' -exec rm -rf {} +
  info "copying the app to $dest" >&2
  install -d -m 0755 "$tmp"
  cp -R "$src/package.json" "$src/config" "$src/systemd" "$src/scripts" "$tmp/"
  local extra
  for extra in package-lock.json docs README.md RELEASE; do if [ -e "$src/$extra" ]; then cp -R "$src/$extra" "$tmp/"; fi; done
  if [ -d "$src/src" ]; then
    # A checkout: build exactly these sources, never a dist/ left over from an earlier build.
    local commit
    commit="$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    info "building $version from source (commit $commit): npm ci, npm run build, npm prune --omit=dev" >&2
    cp -R "$src/src" "$src/tsconfig.json" "$tmp/"
    (cd "$tmp" && npm ci --no-audit --no-fund && VENDGATE_BUILD_COMMIT="$commit" npm run build && npm prune --omit=dev --no-audit --no-fund) >&2
    rm -rf "$tmp/src" "$tmp/tsconfig.json"
  elif [ -f "$src/dist/vendgate.js" ] && [ -f "$src/RELEASE" ] && [ -d "$src/node_modules" ]; then
    # A built release (npm run release): everything is in it, native modules and its node included.
    cp -R "$src/dist" "$src/node_modules" "$tmp/"
    if [ -d "$src/node" ]; then cp -R "$src/node" "$tmp/"; fi
  elif [ -f "$src/dist/main.js" ]; then
    # An unpacked tree with dist/ but no dependencies.
    cp -R "$src/dist" "$tmp/"
    info "npm ci --omit=dev (native modules build here if no prebuilt binary fits)" >&2
    (cd "$tmp" && npm ci --omit=dev --no-audit --no-fund) >&2
  else
    rm -rf "$tmp"
    die "$src has neither src/ (a checkout) nor dist/main.js (a release)"
  fi
  crash_point copy-unfinished
  sync
  mv -T "$tmp" "$dest"
  sync "$APP_DIR/releases"
  printf '%s\n' "$dest"
}

# Points `current` at a release in one rename, so the service never sees a half-switched link.
switch_current() {
  ln -sfn "$1" "$APP_DIR/current.new"
  mv -T "$APP_DIR/current.new" "$APP_DIR/current"
  sync "$APP_DIR"
}

install_release() {
  step "Installing the application"
  local release src
  src="$(source_dir)"
  if [ -n "${RELEASE_ARTEFACT:-}" ]; then src="$(unpack_tarball "$RELEASE_ARTEFACT")"; fi
  use_release_node "$src"
  check_release_node "$src"
  release="$(build_release "$src")"
  if [ -n "${RELEASE_ARTEFACT:-}" ]; then rm -rf "$(dirname "$src")" "$(dirname "$RELEASE_ARTEFACT")"; fi
  switch_current "$release"
  info "current → $release"
}

write_config() {
  step "Configuration in $ETC_DIR"
  local example="$APP_DIR/current/config/examples/${EXAMPLE:-sandbox}.yaml"
  [ -f "$example" ] || die "no example named '${EXAMPLE:-sandbox}': see $APP_DIR/current/config/examples/"
  if [ -e "$ETC_DIR/config.yaml" ]; then
    info "config.yaml exists: left as it is"
  else
    install -m 0640 "$example" "$ETC_DIR/config.yaml"
    chown "root:$SERVICE_USER" "$ETC_DIR/config.yaml"
    info "wrote config.yaml from $(basename "$example"): edit device.id, provider, actuator"
  fi
  if [ -e "$ETC_DIR/secrets.env" ]; then
    info "secrets.env exists: left as it is"
  else
    install -m 0640 "$APP_DIR/current/systemd/secrets.env.example" "$ETC_DIR/secrets.env"
    chown "root:$SERVICE_USER" "$ETC_DIR/secrets.env"
    info "wrote secrets.env (empty): put the provider's secrets there"
  fi
  # The key that updates are checked against (update.sh): the one this install was verified with.
  if [ -n "${RELEASE_KEY:-}" ]; then
    install -m 0644 "$RELEASE_KEY" "$ETC_DIR/release-key.pub"
  elif [ ! -e "$ETC_DIR/release-key.pub" ] && [ -f "$APP_DIR/current/config/release-key.pub" ]; then
    install -m 0644 "$APP_DIR/current/config/release-key.pub" "$ETC_DIR/release-key.pub"
  fi
  # Reference copies, refreshed on every run: the real files are only ever written by a person.
  install -m 0644 "$APP_DIR/current/systemd/cloudflared.yml.example" "$ETC_DIR/cloudflared.yml.example"
}

# The `vendgate` command of a device, with its node, configuration and app directory baked in.
cli_script() {
  local node="$1" etc="$2" app="$3"
  cat <<EOF
#!/bin/sh
# vendgate on this device: the service's node, code, configuration and secrets (written by install-pi.sh).
# The secrets are read by vendgate itself from $etc/secrets.env, as the service reads its copy
# (systemd's LoadCredential): as KEY=VALUE data, never run as shell.
set -eu
if [ -z "\${CREDENTIALS_DIRECTORY:-}" ] && [ -r "$etc/secrets.env" ]; then export CREDENTIALS_DIRECTORY="$etc"; fi
export VENDGATE_CONFIG="\${VENDGATE_CONFIG:-$etc/config.yaml}"
exec "$node" "$app/current/dist/vendgate.js" "\$@"
EOF
}

write_cli() {
  step "Command line: $BIN_DIR/vendgate"
  cli_script "$NODE_BIN" "$ETC_DIR" "$APP_DIR" > "$BIN_DIR/vendgate.new"
  chmod 0755 "$BIN_DIR/vendgate.new"
  mv -f "$BIN_DIR/vendgate.new" "$BIN_DIR/vendgate"
}

# The unit's MemoryMax= is what sizes V8's heap for the Pi (node reads its cgroup's limit; no V8 flag
# on the command line, which would cost Node 22 its compiled built-ins at every start). Raspberry Pi
# OS boots with the kernel's memory controller off, and then the limit neither holds nor sizes the
# heap: node sizes it from the Pi's RAM. Said here, with what to do (docs/install.md).
memory_controller_check() {
  # An earlier release's drop-in for its Node 22 flags line, which the unit no longer has.
  rm -f "$UNIT_DIR/vendgate.service.d/node-flags.conf"
  if grep -qw memory "$ROOT/sys/fs/cgroup/cgroup.controllers" 2> /dev/null \
    || awk '$1 == "memory" && $4 == 1 { found = 1 } END { exit !found }' "$ROOT/proc/cgroups" 2> /dev/null; then
    info "memory controller on: the service is held to MemoryMax=256M and V8's heap sized for it"
  else
    warn "the kernel's memory controller is off (Raspberry Pi OS's default): MemoryMax= does not hold, and node sizes V8's heap from this Pi's RAM. To turn it on: cgroup_enable=memory in /boot/firmware/cmdline.txt and a reboot (docs/install.md)"
  fi
}

install_units() {
  step "systemd units"
  local unit
  # The textfile units are installed, not enabled: they need prometheus-node-exporter (docs/operations.md, Metrics).
  for unit in vendgate.service vendgate-tunnel.service vendgate-kiosk.service vendgate-metrics-textfile.service vendgate-metrics-textfile.timer; do
    install -m 0644 "$APP_DIR/current/systemd/$unit" "$UNIT_DIR/$unit"
  done
  # The units expect /usr/bin/node; the release's own node (or any other) gets a drop-in.
  if [ "$NODE_BIN" != /usr/bin/node ]; then
    install -d -m 0755 "$UNIT_DIR/vendgate.service.d"
    # shellcheck disable=SC2016 # $VENDGATE_NODE_FLAGS is for systemd to expand from the unit's Environment=, not the shell
    printf '[Service]\nExecStart=\nExecStart=%s $VENDGATE_NODE_FLAGS /opt/vendgate/current/dist/vendgate.js start --config /etc/vendgate/config.yaml\n' "$NODE_BIN" > "$UNIT_DIR/vendgate.service.d/node.conf"
    info "node is $NODE_BIN: drop-in vendgate.service.d/node.conf"
  fi
  memory_controller_check
  # time-sync.target means "synchronised" only with systemd-time-wait-sync; 90 s at most, so a
  # device without network still starts (and shows its offline screen).
  install -d -m 0755 "$UNIT_DIR/systemd-time-wait-sync.service.d"
  printf '[Service]\nTimeoutStartSec=90s\n' > "$UNIT_DIR/systemd-time-wait-sync.service.d/vendgate.conf"
  systemctl daemon-reload
  systemctl enable vendgate.service
  if systemctl enable systemd-time-wait-sync.service; then
    info "systemd-time-wait-sync enabled: vendgate starts once the clock is synchronised (at most 90 s)"
  else
    warn "systemd-time-wait-sync.service is not available (chrony? enable chrony-wait.service): vendgate may start before the clock is set"
  fi
  if [ -f "$ETC_DIR/cloudflared.yml" ] && [ -f "$ETC_DIR/tunnel.json" ]; then
    systemctl enable --now vendgate-tunnel.service
  else
    info "tunnel not configured yet (install-pi.sh --tunnel HOSTNAME; docs/operations.md, Tunnel): vendgate-tunnel stays disabled"
  fi
  if [ "${WITH_KIOSK:-0}" = 1 ]; then systemctl enable vendgate-kiosk.service; fi
}

# Starts (or restarts onto the new code) and waits for READY=1: `systemctl restart` of a
# Type=notify unit returns only when the service is ready, or fails.
start_service() {
  step "Starting vendgate"
  systemctl restart vendgate.service || die "vendgate did not start: journalctl -u vendgate -n 50 says why"
  info "vendgate is running"
}

# Cloudflare Tunnel for $TUNNEL_HOSTNAME with every step on this Pi. Idempotent: an existing
# certificate, tunnel (tunnel.json) and cloudflared.yml are reused, never replaced.
setup_tunnel() {
  step "Cloudflare Tunnel for $TUNNEL_HOSTNAME (webhooks only)"
  if command -v cloudflared > /dev/null; then
    info "cloudflared: $(cloudflared --version 2>&1 | head -n 1)"
  else
    info "adding Cloudflare's Debian repository (pkg.cloudflare.com) and installing cloudflared"
    install -d -m 0755 "$ROOT/usr/share/keyrings" "$ROOT/etc/apt/sources.list.d"
    curl -fsSL https://pkg.cloudflare.com/cloudflare-main.gpg -o "$ROOT/usr/share/keyrings/cloudflare-main.gpg"
    echo 'deb [signed-by=/usr/share/keyrings/cloudflare-main.gpg] https://pkg.cloudflare.com/cloudflared any main' > "$ROOT/etc/apt/sources.list.d/cloudflared.list"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cloudflared
  fi
  local cert="$ETC_DIR/cloudflared-cert.pem" device_id tunnel_id
  device_id="$(sed -n 's/^  id: *["'"'"']\{0,1\}\([a-z0-9-]*\).*/\1/p' "$ETC_DIR/config.yaml" | head -n 1)"
  if [ ! -f "$ETC_DIR/tunnel.json" ]; then
    if [ ! -f "$cert" ]; then
      info "log in to Cloudflare: open the URL below on any phone or computer and choose the zone of $TUNNEL_HOSTNAME (this waits)"
      rm -f "${HOME:-/root}/.cloudflared/cert.pem"
      cloudflared tunnel login
      install -m 0600 "${HOME:-/root}/.cloudflared/cert.pem" "$cert"
    fi
    cloudflared --origincert "$cert" tunnel create --credentials-file "$ETC_DIR/tunnel.json" "vendgate-${device_id:-$TUNNEL_HOSTNAME}"
    chmod 0600 "$ETC_DIR/tunnel.json"
  else
    info "tunnel.json exists: reusing that tunnel"
  fi
  tunnel_id="$(sed -n 's/.*"TunnelID" *: *"\([0-9a-f-]*\)".*/\1/p' "$ETC_DIR/tunnel.json")"
  [ -n "$tunnel_id" ] || die "$ETC_DIR/tunnel.json has no TunnelID: move it aside and run again"
  if [ -f "$cert" ]; then
    cloudflared --origincert "$cert" tunnel route dns "$tunnel_id" "$TUNNEL_HOSTNAME" \
      || warn "could not route $TUNNEL_HOSTNAME to the tunnel (a DNS record that points elsewhere?): log in again (docs/security.md) and run cloudflared tunnel route dns --overwrite-dns $tunnel_id $TUNNEL_HOSTNAME"
  else
    info "no Cloudflare login on this device (deleted after the tunnel was made): the DNS route is left as it is"
  fi
  # The account certificate manages the whole zone; the tunnel runs on tunnel.json alone. It does
  # not stay on the device (docs/security.md says how to log in again for a DNS change).
  rm -f "$cert" "${HOME:-/root}/.cloudflared/cert.pem"
  info "deleted the Cloudflare account certificate (cert.pem): the tunnel needs only $ETC_DIR/tunnel.json"
  if [ -e "$ETC_DIR/cloudflared.yml" ]; then
    info "cloudflared.yml exists: left as it is"
  else
    sed -e "s/^tunnel: .*/tunnel: $tunnel_id/" -e "s/pay-vm-001\.example\.com/$TUNNEL_HOSTNAME/g" \
      "$APP_DIR/current/systemd/cloudflared.yml.example" > "$ETC_DIR/cloudflared.yml"
    # No secret in it (tunnel.json holds that): readable by the selftest, which runs as vendgate.
    chmod 0640 "$ETC_DIR/cloudflared.yml"
    chown "root:$SERVICE_USER" "$ETC_DIR/cloudflared.yml"
    info "wrote cloudflared.yml: https://$TUNNEL_HOSTNAME/webhooks/ → http://127.0.0.1:8787, everything else 404"
  fi
  systemctl enable --now vendgate-tunnel.service
  info "now set http.webhook.publicUrl: https://$TUNNEL_HOSTNAME in $ETC_DIR/config.yaml and register https://$TUNNEL_HOSTNAME/webhooks/<provider> with the provider"
}

# As the service user: root runs nothing that reads or writes where the service user can.
run_selftest() {
  step "Selftest"
  if runuser -u "$SERVICE_USER" -- "$BIN_DIR/vendgate" selftest --expect-service; then
    return 0
  fi
  return 1
}

main() {
  EXAMPLE=sandbox
  WITH_KIOSK=0
  RELEASE_ARTEFACT=""
  RELEASE_KEY=""
  TUNNEL_HOSTNAME=""
  TUNNEL_ONLY=0
  local others=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --example) EXAMPLE="${2:?--example needs a name, e.g. turnstile-passage}"; others=1; shift 2 ;;
      --kiosk) WITH_KIOSK=1; others=1; shift ;;
      --tunnel-only)
        TUNNEL_ONLY=1
        TUNNEL_HOSTNAME="${2:?--tunnel-only needs the public host name, e.g. pay-vm-001.example.com}"; shift 2
        [[ "$TUNNEL_HOSTNAME" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]] || die "--tunnel-only $TUNNEL_HOSTNAME is not a host name (e.g. pay-vm-001.example.com)" ;;
      --tunnel)
        TUNNEL_HOSTNAME="${2:?--tunnel needs the public host name, e.g. pay-vm-001.example.com}"; shift 2
        [[ "$TUNNEL_HOSTNAME" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]] || die "--tunnel $TUNNEL_HOSTNAME is not a host name (e.g. pay-vm-001.example.com)" ;;
      --release) RELEASE_ARTEFACT="${2:?--release needs a vendgate-<version>-linux-<arch>.tar.gz}"; others=1; shift 2 ;;
      --key) RELEASE_KEY="${2:?--key needs the minisign public key of the operator}"; others=1; shift 2 ;;
      -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
      *) die "unknown option $1 (see --help)" ;;
    esac
  done
  if [ -n "$RELEASE_ARTEFACT" ]; then
    [ -n "$RELEASE_KEY" ] || die "--release needs --key FILE: the operator's public key (docs/install.md, Verifying a release)"
    RELEASE_ARTEFACT="$(cd "$(dirname "$RELEASE_ARTEFACT")" && pwd)/$(basename "$RELEASE_ARTEFACT")"
    case "$RELEASE_ARTEFACT" in *.tar.gz) ;; *.deb) die "a .deb installs with: sudo apt install $RELEASE_ARTEFACT" ;; esac
  fi
  trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
  require_root "$@"
  if [ "$TUNNEL_ONLY" = 1 ]; then
    [ "$others" = 0 ] || die "--tunnel-only takes no other option: it changes only the tunnel of an installed device"
    if [ ! -L "$APP_DIR/current" ] || [ ! -f "$ETC_DIR/config.yaml" ]; then
      die "vendgate is not installed here ($APP_DIR/current, $ETC_DIR/config.yaml): install it first (sudo apt install ./vendgate_<version>_<arch>.deb), or run this script with --tunnel"
    fi
    setup_tunnel
    step "Tunnel set up"
    info "restart vendgate to use it: sudo systemctl restart vendgate && sudo vendgate selftest"
    return 0
  fi
  if [ -n "$RELEASE_ARTEFACT" ]; then
    step "Verifying $(basename "$RELEASE_ARTEFACT")"
    verify_artefact "$RELEASE_ARTEFACT" "$RELEASE_KEY"
    # From here on only the verified copy is used.
    RELEASE_ARTEFACT="$VERIFIED_ARTEFACT"
  fi
  check_machine
  # Before anything changes: the node a checkout would run on (a release tarball brings its own).
  if [ -z "$RELEASE_ARTEFACT" ]; then use_release_node "$(source_dir)"; fi
  install_packages
  create_users
  install_release
  write_config
  write_cli
  install_units
  if [ -n "$TUNNEL_HOSTNAME" ]; then setup_tunnel; fi
  start_service
  if ! run_selftest; then
    die "the selftest found problems: fix the FAIL lines above (docs/operations.md explains each), then: sudo vendgate selftest"
  fi
  step "Done"
  info "edit $ETC_DIR/config.yaml and $ETC_DIR/secrets.env, then: sudo systemctl restart vendgate && sudo vendgate selftest"
}

# Sourced by update.sh for its functions; run directly, it installs.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
