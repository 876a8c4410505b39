#!/usr/bin/env bash
# Updates an installed vendgate, health-gated: the new release is put beside the running one, then
# stop (a vend in progress is finished first), back up the database (VACUUM INTO), switch, migrate,
# start, selftest — and the previous release comes back by itself if any of that fails.
#
#   sudo vendgate-update ARTEFACT [--key FILE] [--allow-downgrade]   (the installed copy of scripts/update.sh)
#   sudo scripts/update.sh [SOURCE]
#
#   ARTEFACT    a release: vendgate-<version>-linux-<arch>.tar.gz or vendgate_<version>_<arch>.deb, with
#               SHA256SUMS and SHA256SUMS.minisig beside it. All three are copied into a fresh directory
#               only root can enter and checked there before anything changes: the signature against
#               the key the device was installed with, its signed comment for this version and file,
#               the file against its sum. Only those copies are used afterwards.
#   --key FILE  the minisign public key to check against [/etc/vendgate/release-key.pub]
#   --allow-downgrade  install a release older than the one running (refused without it; logged)
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
# Database backups: a directory only root can write (the service user controls $STATE_DIR).
BACKUP_DIR="$ROOT/var/backups/vendgate"
# The health gate: the selftest must pass within this many seconds (the start itself is bounded by
# the unit's TimeoutStartSec=90).
SELFTEST_TIMEOUT_S="${VENDGATE_SELFTEST_TIMEOUT_S:-120}"

# A consistent copy of the database while the service is stopped, kept where only root writes
# ($BACKUP_DIR, 0700 root). The service user controls $STATE_DIR, so root neither writes nor follows a
# path there: VACUUM INTO runs as the service user into its own directory (a snapshot of the committed
# state, WAL included), the service user's `cat` hands the bytes over a pipe, and root writes them into
# its own directory, then checks that copy (integrity_check) before it counts.
backup_database() {
  local db="$STATE_DIR/vendgate.db" dir="$BACKUP_DIR" stamp target release="$1" node snapshot
  if [ ! -f "$db" ]; then info "no database yet: nothing to back up"; return 0; fi
  node="$release/node/bin/node"
  [ -x "$node" ] || node="$(command -v node)"
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then die "$dir is not a directory: refusing to back up into it"; fi
  install -d -m 0700 -o root -g root "$dir" 2> /dev/null || install -d -m 0700 "$dir"
  chmod 0700 "$dir"
  target="$dir/vendgate-$stamp.db"
  snapshot="$STATE_DIR/.backup-$stamp.db"
  rm -f "$target.partial"
  runuser -u "$SERVICE_USER" -- rm -f "$snapshot"
  # shellcheck disable=SC2016 # JavaScript, not shell: its ${…} are template literals
  runuser -u "$SERVICE_USER" -- env VENDGATE_BACKUP_FROM="$db" VENDGATE_BACKUP_TO="$snapshot" VENDGATE_BACKUP_RELEASE="$release" "$node" --input-type=module -e '
    import { createRequire } from "node:module";
    const require = createRequire(`${process.env.VENDGATE_BACKUP_RELEASE}/package.json`);
    const Database = require("better-sqlite3");
    const from = new Database(process.env.VENDGATE_BACKUP_FROM, { readonly: true, fileMustExist: true });
    from.prepare("VACUUM INTO ?").run(process.env.VENDGATE_BACKUP_TO);
    from.close();
    const snap = new Database(process.env.VENDGATE_BACKUP_TO);
    // The backup mark (src/store/lineage.ts, META_BACKUP): a start on this copy knows it is a backup.
    const seq = (name) => snap.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").get(name)?.seq ?? 0;
    const dbId = snap.prepare("SELECT value FROM meta WHERE key = ?").get("db_id")?.value;
    if (dbId) {
      const highWater = snap.prepare("SELECT coalesce(sum(seq), 0) AS n FROM sqlite_sequence").get().n;
      const mark = { dbId, orders: seq("orders"), events: seq("outbox"), highWater, takenAt: Date.now() };
      snap.pragma("journal_mode = DELETE");
      snap.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run("lineage_backup", JSON.stringify(mark));
    }
    snap.close();
  ' || { runuser -u "$SERVICE_USER" -- rm -f "$snapshot"; return 1; }
  (umask 077 && runuser -u "$SERVICE_USER" -- cat -- "$snapshot" > "$target.partial") || { runuser -u "$SERVICE_USER" -- rm -f "$snapshot"; rm -f "$target.partial"; return 1; }
  runuser -u "$SERVICE_USER" -- rm -f "$snapshot"
  # shellcheck disable=SC2016 # JavaScript, not shell
  VENDGATE_BACKUP_TO="$target.partial" VENDGATE_BACKUP_RELEASE="$release" "$node" --input-type=module -e '
    import { createRequire } from "node:module";
    const require = createRequire(`${process.env.VENDGATE_BACKUP_RELEASE}/package.json`);
    const Database = require("better-sqlite3");
    const copy = new Database(process.env.VENDGATE_BACKUP_TO, { readonly: true, fileMustExist: true });
    const check = copy.pragma("integrity_check", { simple: true });
    const version = copy.pragma("user_version", { simple: true });
    copy.close();
    if (check !== "ok") { console.error(`the backup fails its integrity check: ${check}`); process.exit(1); }
    console.log(`    backup checked: integrity ok, schema version ${version}`);
  ' || { rm -f "$target.partial"; return 1; }
  sync "$target.partial"
  mv -f "$target.partial" "$target"
  chmod 0600 "$target"
  info "database backed up to $target (VACUUM INTO)"
  # Oldest first by name (the stamp sorts), keep the newest few.
  find "$dir" -maxdepth 1 -type f -name 'vendgate-*.db' | sort | head -n "-$KEEP_BACKUPS" | while read -r old; do rm -f "$old"; done
}

# Opens the database with the new code as the service user: openDatabase applies pending migrations.
migrate_database() {
  # The settings are validated as the service sees them: with its secrets, which vendgate reads from
  # secrets.env itself as KEY=VALUE data (as from the unit's LoadCredential), never run as shell.
  runuser -u "$SERVICE_USER" -- env CREDENTIALS_DIRECTORY="$ETC_DIR" "$NODE_BIN" "$APP_DIR/current/dist/vendgate.js" migrate --config "$ETC_DIR/config.yaml"
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

# As the service user: root runs nothing during the update that the service user could steer.
health_check() {
  timeout "$SELFTEST_TIMEOUT_S" runuser -u "$SERVICE_USER" -- "$BIN_DIR/vendgate" selftest --expect-service
}

# Back to the release that ran before; the failed one stays in releases/ for a person to inspect.
rollback() {
  local previous="$1" failed="$2" why="$3"
  trap - ERR
  set +e
  printf '\n==> Rolling back to %s (%s)\n' "$(basename "$previous")" "$why" >&2
  systemctl stop vendgate.service
  switch_current "$previous"
  use_release_node "$previous" > /dev/null
  if [ "${PACKAGE_MODE:-0}" != 1 ]; then write_cli > /dev/null; fi
  install_units > /dev/null
  if systemctl restart vendgate.service && health_check; then
    die "update failed ($why); rolled back to $(basename "$previous"), which runs and passes its selftest. The failed release is $failed; journalctl -u vendgate says what went wrong"
  fi
  die "update failed ($why) and the rolled-back release $(basename "$previous") does not pass its selftest either. Database backups: $BACKUP_DIR/. journalctl -u vendgate -n 100"
}

# The steps after the new release is on disk. Used by update_main and by the .deb's postinst.
gated_update() {
  local src="$1" previous release
  previous="$(readlink -f "$APP_DIR/current")"
  use_release_node "$src"
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

# The version of the release `current` points at ("" when it does not say: a checkout).
installed_version() { sed -n 's/^version=//p' "$APP_DIR/current/RELEASE" 2> /dev/null || true; }

update_main() {
  local arg target="" key="" allow_downgrade=0 installed artefact
  while [ $# -gt 0 ]; do
    arg="$1"
    case "$arg" in
      -h|--help) update_usage; exit 0 ;;
      --key) key="${2:?--key needs a minisign public key file}"; shift 2 ;;
      --allow-downgrade) allow_downgrade=1; shift ;;
      -*) die "unknown option $arg (see --help)" ;;
      *) [ -z "$target" ] || die "one artefact or directory at a time (got '$target' and '$arg'; see --help)"; target="$arg"; shift ;;
    esac
  done
  target="${target:-$(source_dir)}"
  [ -e "$target" ] || die "no such artefact or directory: $target (see --help)"
  trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
  require_root
  [ -L "$APP_DIR/current" ] || die "vendgate is not installed here ($APP_DIR/current is missing): install the .deb or run scripts/install-pi.sh first"
  # Installed from the .deb: the command on the PATH is the package's /usr/bin/vendgate (the release's
  # own node, whichever release is current), and nothing is written that dpkg does not know about.
  if [ -f "$ROOT/usr/lib/vendgate/release/RELEASE" ] && [ -f "$ROOT/usr/bin/vendgate" ]; then
    PACKAGE_MODE=1
    BIN_DIR="$ROOT/usr/bin"
  fi

  if [ -d "$target" ]; then
    gated_update "$(cd "$target" && pwd)"
    return
  fi
  key="${key:-$ETC_DIR/release-key.pub}"
  step "Verifying $(basename "$target")"
  verify_artefact "$target" "$key"
  artefact="$VERIFIED_ARTEFACT"
  # shellcheck disable=SC2064 # the directory of this run, fixed now
  trap "rm -rf '$VERIFY_DIR'" EXIT
  installed="$(installed_version)"
  if [ -n "$installed" ]; then
    if [ "$installed" = "$VERIFIED_VERSION" ]; then
      step "vendgate $installed is already installed: nothing to do"
      info "nothing was changed (to install it again: sudo apt install --reinstall, or sudo vendgate-update another release)"
      return 0
    fi
    if dpkg --compare-versions "$VERIFIED_VERSION" lt "$installed"; then
      [ "$allow_downgrade" = 1 ] || die "$(basename "$target") is version $VERIFIED_VERSION, older than the installed $installed: refusing a downgrade. To go back on purpose: sudo vendgate-update --allow-downgrade $target (docs/install.md, Rollback). Nothing was changed"
      warn "downgrading from $installed to $VERIFIED_VERSION (--allow-downgrade)"
      logger -t vendgate-update "downgrade from $installed to $VERIFIED_VERSION allowed by --allow-downgrade (run by ${SUDO_USER:-$(id -un)})" 2> /dev/null || true
    fi
  fi
  case "$artefact" in
    *.deb)
      # dpkg unpacks it to /usr/lib/vendgate/release; its postinst runs gated_update from there.
      step "Installing the package (its postinst switches, health-gated)"
      local downgrade=()
      if [ "$allow_downgrade" = 1 ]; then downgrade=(--allow-downgrades); fi
      DEBIAN_FRONTEND=noninteractive apt-get install -y "${downgrade[@]}" "$artefact"
      ;;
    *.tar.gz)
      local incoming
      incoming="$(unpack_tarball "$artefact")"
      gated_update "$incoming"
      rm -rf "$(dirname "$incoming")"
      ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then update_main "$@"; fi
