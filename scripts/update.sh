#!/usr/bin/env bash
# Updates an installed vendgate to the code in SOURCE (a checkout or an unpacked release; default:
# the tree this script is in): build the new release beside the running one, stop, back up the
# database, switch, migrate, start, selftest — and roll back to the previous release if any of
# that fails. Stopping waits for a vend in progress (systemd sends SIGTERM; the service finishes it).
#
#   sudo scripts/update.sh [SOURCE]
#
# Migrations only add (tables, columns), so the previous release still runs on a migrated
# database; the backup taken before migrating is there for a person, never restored automatically.

set -Eeuo pipefail

case "${1:-}" in
  -h | --help)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

# shellcheck source=scripts/install-pi.sh
. "$(dirname "${BASH_SOURCE[0]}")/install-pi.sh"

KEEP_RELEASES=3
KEEP_BACKUPS=3

backup_database() {
  local db="$STATE_DIR/vendgate.db" dir="$STATE_DIR/backups" stamp suffix
  if [ ! -f "$db" ]; then info "no database yet: nothing to back up"; return 0; fi
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  install -d -m 0750 "$dir"
  # The service is stopped, so the file and its WAL are at rest: a plain copy is consistent.
  for suffix in "" -wal -shm; do
    if [ -f "$db$suffix" ]; then cp -p "$db$suffix" "$dir/vendgate-$stamp.db$suffix"; fi
  done
  chown -R "$SERVICE_USER:$SERVICE_USER" "$dir"
  info "database backed up to $dir/vendgate-$stamp.db"
  # Oldest first by name (the stamp sorts), keep the newest few.
  find "$dir" -maxdepth 1 -name 'vendgate-*.db' | sort | head -n "-$KEEP_BACKUPS" | while read -r old; do rm -f "$old" "$old-wal" "$old-shm"; done
}

# Opens the database with the new code as the service user: openDatabase applies pending migrations.
migrate_database() {
  (
    # The settings are validated as the service sees them: with its secrets.
    # shellcheck source=/dev/null
    if [ -r "$ETC_DIR/secrets.env" ]; then set -a; . "$ETC_DIR/secrets.env"; set +a; fi
    runuser -u "$SERVICE_USER" -- "$NODE_BIN" "$APP_DIR/current/dist/vendgate.js" migrate --config "$ETC_DIR/config.yaml"
  )
}

prune_releases() {
  local keep_current keep_previous
  keep_current="$(readlink -f "$APP_DIR/current")"
  keep_previous="$1"
  find "$APP_DIR/releases" -mindepth 1 -maxdepth 1 -type d | sort | head -n "-$KEEP_RELEASES" | while read -r old; do
    if [ "$(readlink -f "$old")" != "$keep_current" ] && [ "$(readlink -f "$old")" != "$keep_previous" ]; then
      rm -rf "$old"
      info "removed old release $(basename "$old")"
    fi
  done
}

# Back to the release that ran before; the failed one stays in releases/ for a person to inspect.
rollback() {
  local previous="$1" failed="$2" why="$3"
  trap - ERR
  set +e
  printf '\n==> Rolling back to %s (%s)\n' "$(basename "$previous")" "$why" >&2
  systemctl stop vendgate.service
  switch_current "$previous"
  if systemctl restart vendgate.service && "$BIN_DIR/vendgate" selftest --expect-service; then
    die "update failed ($why); rolled back to $(basename "$previous"), which runs and passes its selftest. The failed release is $failed; journalctl -u vendgate says what went wrong"
  fi
  die "update failed ($why) and the rolled-back release $(basename "$previous") does not pass its selftest either. Database backups: $STATE_DIR/backups/. journalctl -u vendgate -n 100"
}

update_main() {
  local src="${1:-$(source_dir)}" previous release
  [ -d "$src" ] || die "no such directory: $src"
  src="$(cd "$src" && pwd)"
  trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
  require_root "$@"
  [ -L "$APP_DIR/current" ] || die "vendgate is not installed here ($APP_DIR/current is missing): run scripts/install-pi.sh first"
  previous="$(readlink -f "$APP_DIR/current")"
  check_node

  step "Building the new release from $src (the service keeps running meanwhile)"
  release="$(build_release "$src")"
  info "new release: $release"

  step "Stopping vendgate (a vend in progress is finished first)"
  systemctl stop vendgate.service

  step "Backing up the database"
  backup_database

  step "Switching to $(basename "$release")"
  switch_current "$release"
  # Units and the command line may have changed with the release.
  write_cli
  install_units

  step "Migrating the database"
  migrate_database || rollback "$previous" "$release" "the migration failed"

  step "Starting vendgate"
  systemctl restart vendgate.service || rollback "$previous" "$release" "the new release did not start"

  step "Selftest"
  "$BIN_DIR/vendgate" selftest --expect-service || rollback "$previous" "$release" "the new release failed its selftest"

  step "Cleaning up"
  prune_releases "$previous"
  step "Updated: $(basename "$previous") → $(basename "$release")"
}

update_main "$@"
