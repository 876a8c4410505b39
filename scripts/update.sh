#!/usr/bin/env bash
# Updates an installed vendgate, health-gated: the new release is put beside the running one, then
# stop (a vend in progress is finished first), back up the database (VACUUM INTO), switch, migrate,
# start, selftest — and the previous release comes back by itself if any of that fails.
#
#   sudo vendgate-update ARTEFACT [--key FILE]      (the installed copy of scripts/update.sh)
#   sudo scripts/update.sh [SOURCE]
#
#   ARTEFACT    a release: vendgate-<version>-linux-<arch>.tar.gz or vendgate_<version>_<arch>.deb, with
#               SHA256SUMS and SHA256SUMS.minisig beside it. Both are checked before anything changes:
#               the signature against the key the device was installed with, the file against its sum.
#   --key FILE  the minisign public key to check against [/etc/vendgate/release-key.pub]
#   SOURCE      a directory: a checkout (built here: npm ci, npm run build) or an unpacked release;
#               not verified (development). Default: the tree this script is in.
#   -h, --help  this text
#
# A power cut at any step leaves a release that starts: the new release is complete on disk (synced)
# before `current` points at it, and that switch is one rename. Migrations only add (tables, columns),
# so the previous release still runs on a migrated database; the backup taken before migrating is
# there for a person (docs/install.md, Rollback), never restored automatically.

set -Eeuo pipefail

# shellcheck source=scripts/install-pi.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/install-pi.sh"

KEEP_RELEASES=3
KEEP_BACKUPS=3
# The health gate: the selftest must pass within this many seconds (the start itself is bounded by
# the unit's TimeoutStartSec=90).
SELFTEST_TIMEOUT_S="${VENDGATE_SELFTEST_TIMEOUT_S:-120}"

# A consistent copy of the database while the service is stopped: VACUUM INTO writes a snapshot of the
# committed state (WAL included) into a new, compacted file; it is checked and synced before it counts.
backup_database() {
  local db="$STATE_DIR/vendgate.db" dir="$STATE_DIR/backups" stamp target release="$1"
  if [ ! -f "$db" ]; then info "no database yet: nothing to back up"; return 0; fi
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  install -d -m 0750 "$dir"
  target="$dir/vendgate-$stamp.db"
  rm -f "$target.partial"
  # shellcheck disable=SC2016 # JavaScript, not shell: its ${…} are template literals
  VENDGATE_BACKUP_FROM="$db" VENDGATE_BACKUP_TO="$target.partial" VENDGATE_BACKUP_RELEASE="$release" "$NODE_BIN" --input-type=module -e '
    import { createRequire } from "node:module";
    const require = createRequire(`${process.env.VENDGATE_BACKUP_RELEASE}/package.json`);
    const Database = require("better-sqlite3");
    const from = new Database(process.env.VENDGATE_BACKUP_FROM, { readonly: true, fileMustExist: true });
    from.prepare("VACUUM INTO ?").run(process.env.VENDGATE_BACKUP_TO);
    from.close();
    const copy = new Database(process.env.VENDGATE_BACKUP_TO);
    // The backup mark (src/store/lineage.ts, META_BACKUP): a start on this copy knows it is a backup.
    const seq = (name) => copy.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").get(name)?.seq ?? 0;
    const dbId = copy.prepare("SELECT value FROM meta WHERE key = ?").get("db_id")?.value;
    if (dbId) {
      const highWater = copy.prepare("SELECT coalesce(sum(seq), 0) AS n FROM sqlite_sequence").get().n;
      const mark = { dbId, orders: seq("orders"), events: seq("outbox"), highWater, takenAt: Date.now() };
      copy.pragma("journal_mode = DELETE");
      copy.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run("lineage_backup", JSON.stringify(mark));
    }
    const check = copy.pragma("integrity_check", { simple: true });
    const version = copy.pragma("user_version", { simple: true });
    copy.close();
    if (check !== "ok") { console.error(`the backup fails its integrity check: ${check}`); process.exit(1); }
    console.log(`    backup checked: integrity ok, schema version ${version}`);
  ' || { rm -f "$target.partial"; return 1; }
  sync "$target.partial"
  mv -f "$target.partial" "$target"
  chown "$SERVICE_USER:$SERVICE_USER" "$target"
  chmod 0640 "$target"
  info "database backed up to $target (VACUUM INTO)"
  # Oldest first by name (the stamp sorts), keep the newest few.
  find "$dir" -maxdepth 1 -name 'vendgate-*.db' | sort | head -n "-$KEEP_BACKUPS" | while read -r old; do rm -f "$old"; done
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
  find "$APP_DIR/releases" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | sort | head -n "-$KEEP_RELEASES" | while read -r old; do
    if [ "$(readlink -f "$old")" != "$keep_current" ] && [ "$(readlink -f "$old")" != "$keep_previous" ]; then
      rm -rf "$old"
      info "removed old release $(basename "$old")"
    fi
  done
}

health_check() {
  timeout "$SELFTEST_TIMEOUT_S" "$BIN_DIR/vendgate" selftest --expect-service
}

# Back to the release that ran before; the failed one stays in releases/ for a person to inspect.
rollback() {
  local previous="$1" failed="$2" why="$3"
  trap - ERR
  set +e
  printf '\n==> Rolling back to %s (%s)\n' "$(basename "$previous")" "$why" >&2
  systemctl stop vendgate.service
  switch_current "$previous"
  if [ "${PACKAGE_MODE:-0}" != 1 ]; then write_cli > /dev/null; fi
  install_units > /dev/null
  if systemctl restart vendgate.service && health_check; then
    die "update failed ($why); rolled back to $(basename "$previous"), which runs and passes its selftest. The failed release is $failed; journalctl -u vendgate says what went wrong"
  fi
  die "update failed ($why) and the rolled-back release $(basename "$previous") does not pass its selftest either. Database backups: $STATE_DIR/backups/. journalctl -u vendgate -n 100"
}

# The steps after the new release is on disk. Used by update_main and by the .deb's postinst.
gated_update() {
  local src="$1" previous release
  previous="$(readlink -f "$APP_DIR/current")"
  check_release_node "$src"

  step "Copying the new release from $src (the service keeps running meanwhile)"
  release="$(build_release "$src")"
  info "new release: $release"
  crash_point after-copy

  step "Stopping vendgate (a vend in progress is finished first)"
  systemctl stop vendgate.service
  crash_point after-stop

  step "Backing up the database"
  backup_database "$previous" || { systemctl start vendgate.service || true; die "the database backup failed: nothing was changed, the previous release is started again"; }
  crash_point after-backup

  step "Switching to $(basename "$release")"
  switch_current "$release"
  crash_point after-switch
  # Units and the command line may have changed with the release.
  if [ "${PACKAGE_MODE:-0}" != 1 ]; then write_cli; fi
  install_units
  crash_point after-units

  step "Migrating the database"
  migrate_database || rollback "$previous" "$release" "the migration failed"
  crash_point after-migrate

  step "Starting vendgate"
  systemctl restart vendgate.service || rollback "$previous" "$release" "the new release did not start"
  crash_point after-start

  step "Selftest (at most ${SELFTEST_TIMEOUT_S} s)"
  health_check || rollback "$previous" "$release" "the new release failed its selftest"

  step "Cleaning up"
  prune_releases "$previous"
  step "Updated: $(basename "$previous") → $(basename "$release")"
}

update_usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

update_main() {
  local arg target="" key=""
  while [ $# -gt 0 ]; do
    arg="$1"
    case "$arg" in
      -h|--help) update_usage; exit 0 ;;
      --key) key="${2:?--key needs a minisign public key file}"; shift 2 ;;
      -*) die "unknown option $arg (see --help)" ;;
      *) [ -z "$target" ] || die "one artefact or directory at a time (got '$target' and '$arg'; see --help)"; target="$arg"; shift ;;
    esac
  done
  target="${target:-$(source_dir)}"
  [ -e "$target" ] || die "no such artefact or directory: $target (see --help)"
  trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
  require_root
  [ -L "$APP_DIR/current" ] || die "vendgate is not installed here ($APP_DIR/current is missing): install the .deb or run scripts/install-pi.sh first"
  check_node

  if [ -d "$target" ]; then
    gated_update "$(cd "$target" && pwd)"
    return
  fi
  key="${key:-$ETC_DIR/release-key.pub}"
  step "Verifying $(basename "$target")"
  verify_artefact "$target" "$key"
  case "$target" in
    *.deb)
      # dpkg unpacks it to /usr/lib/vendgate/release; its postinst runs gated_update from there.
      step "Installing the package (its postinst switches, health-gated)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades "$(cd "$(dirname "$target")" && pwd)/$(basename "$target")"
      ;;
    *.tar.gz)
      local incoming
      incoming="$(unpack_tarball "$target")"
      gated_update "$incoming"
      rm -rf "$(dirname "$incoming")"
      ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then update_main "$@"; fi
