#!/bin/sh
# System packages of the e2e suite (npm run test:e2e, as root), which also runs the system tests
# (test/storage, test/techniques/power-cut, test/fleet-relay/route-theft):
#   socat    — a pseudo-terminal pair that serves as a real serial line (test/techniques/e2e/serial*.test.ts)
#   chromium — the kiosk page in a real browser (playwright-core, executablePath /usr/bin/chromium)
#   the shellcheck linter — the install and update scripts (test/techniques/e2e/scripts.test.ts)
#   systemd  — systemd-analyze verify on the unit files (test/techniques/e2e/systemd-verify.test.ts)
#   prometheus — for its promtool: /metrics through promtool check metrics (test/techniques/e2e/metrics-promtool.test.ts)
#   mosquitto — two real bridged brokers with the shipped fleet ACL (test/techniques/e2e/fleet*.test.ts, test/fleet-relay/route-theft.test.ts)
#   fuse3, libfuse3-dev — the power-cut file system of test/techniques/power-cut/ (our own FUSE passthrough,
#            built by test/techniques/power-cut/build.sh; needs /dev/fuse and root)
#   minisign, dpkg-dev's dpkg-deb, g++/make, g++-aarch64-linux-gnu, qemu-user — npm run release and its
#            artefacts tested natively and under arm64 emulation (test/techniques/e2e/release.test.ts)
#   debootstrap, systemd-container — a Debian bookworm root (cached) booted with systemd-nspawn --boot, where
#            the .deb is installed, updated, removed and purged for real (test/techniques/e2e/debian-package.test.ts)
#   e2fsprogs, util-linux, mount — ext4 on a loop device turned read-only by the kernel, and a small
#              tmpfs filled up (test/storage/*.test.ts; they mount, so they run as root, as CI does)
#   faketime — libfaketime under the spawned service, its wall clock moved at run time (test/storage/wall-clock.test.ts)
# Idempotent: installs only what is missing; runs apt-get update only when something is.
# Debian/Ubuntu/Raspberry Pi OS. Run as root or with sudo available.
set -eu
case "${1:-}" in
  -h | --help)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  '') ;;
  *)
    echo "install-test-deps: takes no arguments (--help)" >&2
    exit 64
    ;;
esac

missing=""
command -v socat >/dev/null 2>&1 || missing="$missing socat"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
command -v promtool >/dev/null 2>&1 || missing="$missing prometheus"
{ command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; } || missing="$missing mosquitto"
command -v fusermount3 >/dev/null 2>&1 || missing="$missing fuse3"
pkg-config --exists fuse3 2>/dev/null || missing="$missing libfuse3-dev pkg-config"
command -v minisign >/dev/null 2>&1 || missing="$missing minisign"
command -v dpkg-deb >/dev/null 2>&1 || missing="$missing dpkg"
command -v g++ >/dev/null 2>&1 || missing="$missing g++"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || missing="$missing g++-aarch64-linux-gnu"
command -v qemu-aarch64 >/dev/null 2>&1 || missing="$missing qemu-user"
{ command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ]; } || missing="$missing debootstrap"
command -v systemd-nspawn >/dev/null 2>&1 || missing="$missing systemd-container"
{ command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ]; } || missing="$missing e2fsprogs"
{ command -v losetup >/dev/null 2>&1 || [ -x /usr/sbin/losetup ] || [ -x /sbin/losetup ]; } || missing="$missing util-linux"
{ command -v mount >/dev/null 2>&1 || [ -x /usr/bin/mount ] || [ -x /bin/mount ]; } || missing="$missing mount"
ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing="$missing faketime"

if [ -z "$missing" ]; then
  echo "install-test-deps: everything the e2e, release, storage and power-cut tests need is already present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1; then
  as_root="sudo"
else
  echo "install-test-deps: need root (or sudo) to install:$missing" >&2
  exit 1
fi

echo "install-test-deps: installing$missing"
$as_root apt-get update
# shellcheck disable=SC2086 # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends $missing

for tool in $missing; do
  case "$tool" in
    prometheus) command -v promtool >/dev/null 2>&1 || { echo "install-test-deps: promtool still missing" >&2; exit 1; } ;;
    systemd) command -v systemd-analyze >/dev/null 2>&1 || { echo "install-test-deps: systemd-analyze still missing" >&2; exit 1; } ;;
    fuse3) command -v fusermount3 >/dev/null 2>&1 || { echo "install-test-deps: fusermount3 still missing" >&2; exit 1; } ;;
    libfuse3-dev) pkg-config --exists fuse3 || { echo "install-test-deps: libfuse3-dev (pkg-config fuse3) still missing" >&2; exit 1; } ;;
    pkg-config) command -v pkg-config >/dev/null 2>&1 || { echo "install-test-deps: pkg-config still missing" >&2; exit 1; } ;;
    dpkg) command -v dpkg-deb >/dev/null 2>&1 || { echo "install-test-deps: dpkg-deb still missing" >&2; exit 1; } ;;
    g++-aarch64-linux-gnu) command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || { echo "install-test-deps: aarch64-linux-gnu-g++ still missing" >&2; exit 1; } ;;
    debootstrap) { command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ]; } || { echo "install-test-deps: debootstrap still missing" >&2; exit 1; } ;;
    systemd-container) command -v systemd-nspawn >/dev/null 2>&1 || { echo "install-test-deps: systemd-nspawn still missing" >&2; exit 1; } ;;
    qemu-user) command -v qemu-aarch64 >/dev/null 2>&1 || { echo "install-test-deps: qemu-aarch64 still missing" >&2; exit 1; } ;;
    mosquitto) { command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; } || { echo "install-test-deps: mosquitto still missing" >&2; exit 1; } ;;
    e2fsprogs) { command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ]; } || { echo "install-test-deps: mkfs.ext4 still missing" >&2; exit 1; } ;;
    util-linux) { command -v losetup >/dev/null 2>&1 || [ -x /usr/sbin/losetup ] || [ -x /sbin/losetup ]; } || { echo "install-test-deps: losetup still missing" >&2; exit 1; } ;;
    faketime) ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || { echo "install-test-deps: libfaketime still missing" >&2; exit 1; } ;;
    mount) { command -v mount >/dev/null 2>&1 || [ -x /usr/bin/mount ] || [ -x /bin/mount ]; } || { echo "install-test-deps: mount still missing" >&2; exit 1; } ;;
    chromium) [ -x /usr/bin/chromium ] || { echo "install-test-deps: /usr/bin/chromium still missing (on Ubuntu the chromium package is a snap shim: install Debian's chromium or point the kiosk e2e test at another binary)" >&2; exit 1; } ;;
    *) command -v "$tool" >/dev/null 2>&1 || { echo "install-test-deps: $tool still missing" >&2; exit 1; } ;;
  esac
done
echo "install-test-deps: done"
