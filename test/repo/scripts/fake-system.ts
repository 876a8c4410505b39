import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { stringify } from 'yaml';
import { afterEach, expect } from 'vitest';
import { tempDir } from '../../helpers/temp.js';
import { freePort } from '../../helpers/service.js';
import { runProcess, type Run } from '../../helpers/process.js';

const REPO = new URL('../../../', import.meta.url).pathname;

/**
 * A Raspberry Pi in a directory: the scripts put every system path under $VENDGATE_ROOT, and the
 * commands that need a real root or a real systemd are stand-ins on PATH that log what they were
 * asked. `systemctl` really starts and stops the installed service (node dist/vendgate.js start, as the unit does), so
 * the scripts' own selftest runs against a live service, as on the device.
 */
const FAKES: Record<string, string> = {
  // Installing cloudflared puts the stand-in (cloudflared.pkg) on PATH, as the Debian package would.
  // A .deb is unpacked into the root and its postinst run as dpkg would (with "configure"); its
  // /usr/bin/vendgate is pointed at the root. The real dpkg and apt: test/techniques/e2e/debian-package.test.ts.
  'apt-get': `echo "apt-get $*" >> "$FAKE_LOG"
case "$*" in *install*cloudflared*) cp "$FAKE_BIN/cloudflared.pkg" "$FAKE_BIN/cloudflared"; chmod +x "$FAKE_BIN/cloudflared" ;; esac
for deb in "$@"; do case "$deb" in
  *.deb)
    rm -rf "$VENDGATE_ROOT/usr/lib/vendgate/release"
    dpkg-deb -x "$deb" "$VENDGATE_ROOT" || exit 100
    sed -i -e "s|/usr/bin/node|$(command -v node)|" -e "s|/etc/vendgate|$VENDGATE_ROOT/etc/vendgate|g" -e "s|/opt/vendgate|$VENDGATE_ROOT/opt/vendgate|g" "$VENDGATE_ROOT/usr/bin/vendgate"
    bash "$VENDGATE_ROOT/usr/lib/vendgate/release/scripts/package-postinst.sh" configure || exit 100 ;;
esac; done`,
  curl: 'echo "curl $*" >> "$FAKE_LOG"; while [ $# -gt 0 ]; do [ "$1" = -o ] && echo fake-key > "$2"; shift; done',
  'cloudflared.pkg': `echo "cloudflared $*" >> "$FAKE_LOG"
case "$*" in
  --version) echo "cloudflared version 2026.11.0 (fake)" ;;
  "tunnel login") mkdir -p "$HOME/.cloudflared"; echo cert > "$HOME/.cloudflared/cert.pem"; echo "Please open the following URL and log in: https://dash.cloudflare.com/argotunnel?..." ;;
  *"tunnel create --credentials-file "*)
    file=""; prev=""; for a in "$@"; do [ "$prev" = --credentials-file ] && file="$a"; prev="$a"; done; [ -n "$file" ] || exit 2; printf '{"AccountTag":"a","TunnelSecret":"s","TunnelID":"6f1c2d3e-0000-4000-8000-00000000abcd"}' > "$file" ;;
esac`,
  groupadd: 'echo "groupadd $*" >> "$FAKE_LOG"',
  usermod: 'echo "usermod $*" >> "$FAKE_LOG"',
  chown: 'echo "chown $*" >> "$FAKE_LOG"',
  useradd: 'echo "useradd $*" >> "$FAKE_LOG"; for last in "$@"; do :; done; echo "$last" >> "$VENDGATE_ROOT/fake-passwd"',
  getent: `case "$1" in
  group) exit 0 ;;
  passwd) grep -qx "$2" "$VENDGATE_ROOT/fake-passwd" 2>/dev/null ;;
esac`,
  runuser: 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"',
  // "npm run build" stands in for tsc with the repository's own build (the real one takes minutes).
  npm: `echo "npm $*" >> "$FAKE_LOG"
case "$*" in
  *--omit=dev*) ln -sfn "${REPO}node_modules" node_modules ;;
  "run build") [ -d src ] || exit 1; rm -rf dist; cp -R "${REPO}dist" dist; printf '{"commit":"%s"}\\n' "$VENDGATE_BUILD_COMMIT" > dist/build-info.json ;;
esac`,
  systemctl: `echo "systemctl $*" >> "$FAKE_LOG"
pidfile="$VENDGATE_ROOT/run-vendgate.pid"
log="$VENDGATE_ROOT/vendgate-service.log"
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
stop() {
  if running; then
    pid="$(cat "$pidfile")"; kill -TERM "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
  rm -f "$pidfile"
}
start() {
  : > "$log"
  # As the unit: secrets.env handed over as a credential (read by vendgate as data), the release's own node when it has one.
  node=node
  if [ -x "$VENDGATE_ROOT/opt/vendgate/current/node/bin/node" ]; then node="$VENDGATE_ROOT/opt/vendgate/current/node/bin/node"; fi
  CREDENTIALS_DIRECTORY="$VENDGATE_ROOT/etc/vendgate" "$node" "$VENDGATE_ROOT/opt/vendgate/current/dist/vendgate.js" start --config "$VENDGATE_ROOT/etc/vendgate/config.yaml" >> "$log" 2>&1 &
  echo $! > "$pidfile"
  # Type=notify: return when the service is ready (at most 120 s, as a loaded machine may need); fail when it died first.
  for _ in $(seq 1 2400); do
    grep -q '"vendgate ready"' "$log" && return 0
    running || return 1
    sleep 0.05
  done
  return 1
}
unit=""; for arg in "$@"; do case "$arg" in vendgate.service|vendgate) unit=vendgate ;; esac; done
case "$1" in
  stop) [ "$unit" = vendgate ] && stop; exit 0 ;;
  start|restart) [ "$unit" = vendgate ] || exit 0; stop; start ;;
  is-active) [ "$unit" = vendgate ] && running && echo active && exit 0; echo inactive; exit 3 ;;
  *) exit 0 ;;
esac`,
};

export interface FakePi {
  root: string;
  bin: string;
  env: NodeJS.ProcessEnv;
  /** What the stand-in commands were asked, one line each. */
  calls(): string[];
  read(path: string): string;
  exists(path: string): boolean;
  /** A source tree of vendgate (what a person would unpack or check out), with `version`. */
  source(version: string, change?: (dir: string) => void): string;
  /** The installed service's kiosk listener (the test-device example's). */
  localUrl: string;
  /** Writes the test device's settings to /etc/vendgate/config.yaml (as a technician would before installing). */
  writeConfig(): void;
  /** Puts this node first on the fake Pi's PATH (e.g. Node 22 for a release's native modules). */
  useNode(node: string): void;
  run(
    script: 'install-pi.sh' | 'update.sh' | 'package-postinst.sh',
    args: string[],
    source: string,
    env?: Record<string, string>,
  ): Promise<Run>;
  /** A command on the fake Pi (its PATH and root), e.g. the stand-in systemctl or the installed vendgate. */
  exec(command: string, args: string[]): Promise<Run>;
  /** Power cut: the service dies at once (SIGKILL), as everything else on the device would. */
  powerCut(): void;
  cleanup(): Promise<void>;
}

/** The release /opt/vendgate/current points at on the fake Pi (e.g. `1.0.0-20261205T002005Z`). */
export const current = (p: FakePi) => basename(readlinkSync(join(p.root, 'opt/vendgate/current')));

export async function fakePi(): Promise<FakePi> {
  const dir = tempDir('vendgate-pi-');
  const root = join(dir.path, 'root');
  const bin = join(dir.path, 'bin');
  mkdirSync(join(root, 'proc/device-tree'), { recursive: true });
  mkdirSync(join(root, 'etc'), { recursive: true });
  mkdirSync(bin);
  writeFileSync(join(root, 'proc/device-tree/model'), 'Raspberry Pi 4 Model B Rev 1.5\0');
  writeFileSync(join(root, 'etc/os-release'), 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_CODENAME=bookworm\n');
  for (const [name, body] of Object.entries(FAKES)) {
    writeFileSync(join(bin, name), `#!/usr/bin/env bash\n${body.replaceAll('${REPO}', REPO)}\n`);
    chmodSync(join(bin, name), 0o755);
  }
  const log = join(dir.path, 'calls.log');
  writeFileSync(log, '');
  mkdirSync(join(dir.path, 'home'));
  const env = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    VENDGATE_ROOT: root,
    FAKE_LOG: log,
    FAKE_BIN: bin,
    HOME: join(dir.path, 'home'),
  };
  const localPort = await freePort();
  const device = {
    device: { id: 'pi-test', mode: 'vending', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
    provider: { name: 'sandbox' },
    http: { local: { host: '127.0.0.1', port: localPort }, webhook: { host: '127.0.0.1', port: await freePort() } },
    storage: { path: join(root, 'var/lib/vendgate/vendgate.db') },
    actuator: { kind: 'sim', sim: { logPath: join(root, 'var/lib/vendgate/actuations.jsonl'), durationMs: 0 } },
    mqtt: { url: '' },
  };
  let sources = 0;

  return {
    root,
    bin,
    env,
    calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
    read: (path) => readFileSync(join(root, path), 'utf8'),
    exists: (path) => existsSync(join(root, path)),
    source(version, change) {
      sources += 1;
      const src = join(dir.path, `src-${sources}`);
      mkdirSync(src);
      for (const part of ['dist', 'config', 'systemd', 'scripts', 'docs']) cpSync(join(REPO, part), join(src, part), { recursive: true });
      cpSync(join(REPO, 'package-lock.json'), join(src, 'package-lock.json'));
      writeFileSync(
        join(src, 'package.json'),
        readFileSync(join(REPO, 'package.json'), 'utf8').replace(/^  "version": ".*",$/m, `  "version": "${version}",`),
      );
      writeFileSync(join(src, 'config/examples/test-device.yaml'), stringify(device));
      change?.(src);
      return src;
    },
    localUrl: `http://127.0.0.1:${localPort}`,
    writeConfig() {
      mkdirSync(join(root, 'etc/vendgate'), { recursive: true });
      writeFileSync(join(root, 'etc/vendgate/config.yaml'), stringify(device));
    },
    useNode(node) {
      symlinkSync(node, join(bin, 'node'));
    },
    run: (script, args, source, extra = {}) =>
      runProcess('bash', [join(source, 'scripts', script), ...args], { env: { ...env, ...extra } }),
    exec: (command, args) => runProcess(command, args, { env }),
    powerCut() {
      const pidFile = join(root, 'run-vendgate.pid');
      if (!existsSync(pidFile)) return;
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
    async cleanup() {
      await new Promise<void>((resolve) => {
        const child = spawn(join(bin, 'systemctl'), ['stop', 'vendgate.service'], { env, stdio: 'ignore' });
        child.on('close', () => resolve());
      });
      dir.cleanup();
    },
  };
}

/**
 * For a test file: fake Pis made by `fresh()` (nothing installed) or `installed()` (release 1.0.0
 * installed by install-pi.sh from the test-device example, its service running); after each test,
 * every Pi made is taken down (its service stopped, its directory removed).
 */
export function fakePiEachTest(): { fresh(): Promise<FakePi>; installed(): Promise<FakePi> } {
  const made: FakePi[] = [];
  afterEach(async () => {
    for (const pi of made.splice(0)) await pi.cleanup();
  });
  const fresh = async () => {
    const pi = await fakePi();
    made.push(pi);
    return pi;
  };
  return {
    fresh,
    async installed() {
      const pi = await fresh();
      const install = await pi.run('install-pi.sh', ['--example', 'test-device'], pi.source('1.0.0'));
      expect(install.code, install.stderr).toBe(0);
      return pi;
    },
  };
}
