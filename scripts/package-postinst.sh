#!/usr/bin/env bash
# The .deb's postinst (configure [old-version], as dpkg passes them): dpkg has unpacked the release to /usr/lib/vendgate/release, a
# staging copy the service never runs from. From there:
#   first install: the service user and directories, the release copied to /opt/vendgate/releases/,
#                  /etc/vendgate/config.yaml from the sandbox example (when there is none), the
#                  units enabled, the service started and its selftest run;
#   upgrade:       update.sh's health-gated steps (stop after a vend in progress, VACUUM INTO backup,
#                  switch, migrate, start, selftest, automatic rollback).
# A power cut while dpkg unpacks leaves /opt/vendgate/current untouched: the running release is not
# a file dpkg owns. `sudo dpkg --configure -a` (or installing the .deb again) finishes the job.
# For tests, every system path is placed under $VENDGATE_ROOT, as in install-pi.sh.

set -Eeuo pipefail

# shellcheck source=scripts/update.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/update.sh"

PACKAGE_MODE=1
# The command on the PATH is the package's own file (/usr/bin/vendgate).
BIN_DIR="$ROOT/usr/bin"
PACKAGED="$ROOT/usr/lib/vendgate/release"

package_main() {
  trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
  use_release_node "$PACKAGED"
  check_release_node "$PACKAGED"
  create_users
  if [ -L "$APP_DIR/current" ]; then
    gated_update "$PACKAGED"
    return
  fi
  step "Installing the application"
  local release
  release="$(build_release "$PACKAGED")"
  switch_current "$release"
  info "current → $release"
  EXAMPLE=sandbox
  write_config
  install_units
  start_service
  if ! run_selftest; then
    warn "the selftest found problems: fix the FAIL lines above (docs/operations.md explains each), then: sudo vendgate selftest"
  fi
  step "Installed $(sed -n 's/^version=//p' "$release/RELEASE")"
  info "next, the guided step (provider, credentials, tunnel; docs/install.md): sudo vendgate setup"
}

case "${1:-}" in
  -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  configure) package_main ;;
  *) die "this is the package's postinst: dpkg runs it as 'postinst configure' (sudo apt install ./vendgate_<version>_<arch>.deb). See --help" ;;
esac
