import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * Reads `strace -f -ttt -y -s 1000 -e trace=<STRACE_CALLS>` output of the service: every write and
 * sync with its time, thread, file and byte count, and the service's own log lines (pino writes
 * them synchronously to its stdout pipe, so they sit in the same trace, in order, between the
 * writes they describe). Those log lines are the step boundaries: no test-only hook is needed, and
 * an older build is measured the same way.
 */
export const STRACE_CALLS = 'fsync,fdatasync,write,pwrite64,pwritev,pwritev2,writev,sync_file_range';
export const STRACE_ARGS = ['-f', '-ttt', '-y', '-s', '1000', '-e', `trace=${STRACE_CALLS}`];

const START = /^(\d+)\s+(\d+\.\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$/;
const RESUMED = /^(\d+)\s+(\d+\.\d+)\s+<\.\.\. (\w+) resumed>(.*)$/;
const RESULT = /\)\s+=\s+(-?\d+)/;
const MESSAGE = /\\"msg\\":\\"((?:[^\\]|\\[^"])*)\\"/;
const SYNCS = new Set(['fsync', 'fdatasync', 'sync_file_range']);

/** What a path is, for the tables: the device's database files apart from the demo's helpers. */
export function fileClass(path, dbName = 'vendgate.db') {
  const name = basename(path);
  if (name === dbName) return 'db';
  if (name === `${dbName}-wal`) return 'wal';
  if (name === `${dbName}-shm`) return 'shm';
  if (name.startsWith(`${dbName}.lineage`)) return 'lineage';
  if (name.startsWith('sandbox.db')) return 'sandbox';
  // The sandbox fiscal register's own file: the register's side, not the device's database.
  if (name.startsWith('fiscal-sandbox.db')) return 'fiscal-register';
  if (name.endsWith('.jsonl')) return 'actuator-log';
  if (
    path.startsWith('pipe:') ||
    path.startsWith('socket:') ||
    path.startsWith('TCP') ||
    path.startsWith('UNIX') ||
    path.startsWith('anon_inode:') ||
    path.startsWith('/dev/')
  )
    return null;
  return 'other';
}

/** Parses a trace file into time-ordered events: { t (ms), call, file, path, bytes, offset, sync, message }. */
export function parseTrace(file) {
  const pending = new Map();
  const events = [];
  const finish = (start, rest) => {
    const result = RESULT.exec(rest);
    const value = result ? Number(result[1]) : -1;
    const { call, path, args, t, fd } = start;
    if (fd === '1' && (call === 'write' || call === 'writev')) {
      const message = MESSAGE.exec(args)?.[1];
      if (message) events.push({ t, message, text: args });
      return;
    }
    const cls = fileClass(path);
    if (!cls) return;
    const offset = call === 'pwrite64' ? Number(/,\s*(\d+)\)?\s*$/.exec(args.replace(RESULT, ''))?.[1] ?? NaN) : null;
    events.push({ t, call, file: cls, path, sync: SYNCS.has(call), bytes: SYNCS.has(call) ? 0 : Math.max(0, value), offset });
  };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    let m = START.exec(line);
    if (m) {
      const [, pid, time, call, fd, path, args] = m;
      const start = { t: Number(time) * 1000, call, fd, path, args };
      if (args.includes('<unfinished ...>')) pending.set(pid, { ...start, args: args.replace('<unfinished ...>', '') });
      else finish(start, args);
      continue;
    }
    m = RESUMED.exec(line);
    if (m && pending.has(m[1])) {
      const start = pending.get(m[1]);
      pending.delete(m[1]);
      finish({ ...start, args: start.args + m[4] }, m[4]);
    }
  }
  return events.sort((a, b) => a.t - b.t);
}

/**
 * Marks checkpoint work: writes and syncs of the main database file, the WAL sync just before them
 * (a checkpoint syncs the WAL, copies it, syncs the file) and the WAL header a restarted WAL writes
 * (32 bytes at offset 0, synced at the next FULL commit) — costs a checkpoint causes, wherever they land.
 */
export function markCheckpoints(events) {
  const io = events.filter((e) => e.file);
  for (let i = 0; i < io.length; i += 1) {
    const e = io[i];
    if (e.file === 'db' || e.file === 'lineage') e.checkpoint = true;
    if (e.file === 'wal' && e.sync) {
      const next = io.slice(i + 1).find((x) => x.file === 'wal' || x.file === 'db');
      if (next?.file === 'db' && !next.sync) e.checkpoint = true;
    }
    if (e.file === 'wal' && e.call === 'pwrite64' && e.offset === 0 && e.bytes === 32) {
      e.walRestart = true;
      const sync = io.slice(i + 1).find((x) => x.file === 'wal' && (x.sync || x.offset !== 32));
      if (sync?.sync) sync.walRestart = true;
    }
  }
  return events;
}

/**
 * Assigns every file event to the step that the next boundary closes. `boundaries` are
 * { t, closes } sorted by time (from the bench's own clock and from log messages); events after
 * the last boundary go to `tail`.
 */
export function attribute(events, boundaries, tail = 'after', checkpointWindow = [-Infinity, Infinity]) {
  const sorted = [...boundaries].sort((a, b) => a.t - b.t);
  let b = 0;
  const out = [];
  for (const e of events) {
    if (!e.file) continue;
    while (b < sorted.length && sorted[b].t < e.t) b += 1;
    // Checkpoints at start-up and at close stay with those: the per-order figure counts the sales'.
    const inWindow = e.t >= checkpointWindow[0] && e.t <= checkpointWindow[1];
    const step =
      inWindow && (e.checkpoint || e.walRestart)
        ? e.walRestart
          ? 'checkpoint: WAL restart header'
          : 'checkpoint'
        : (sorted[b]?.closes ?? tail);
    out.push({ ...e, step });
  }
  return out;
}

/** Sums syncs and bytes per step and file group: the device's database (db, wal, shm) apart from the demo's helpers. */
export function summarise(attributed, orders) {
  const steps = new Map();
  for (const e of attributed) {
    const s = steps.get(e.step) ?? { step: e.step, dbSyncs: 0, dbBytes: 0, otherSyncs: 0, otherBytes: 0, files: {} };
    const database = e.file === 'db' || e.file === 'wal' || e.file === 'shm' || e.file === 'lineage';
    if (database) {
      s.dbSyncs += e.sync ? 1 : 0;
      s.dbBytes += e.bytes;
    } else {
      s.otherSyncs += e.sync ? 1 : 0;
      s.otherBytes += e.bytes;
    }
    const f = s.files[e.file] ?? { syncs: 0, bytes: 0, writes: 0 };
    f.syncs += e.sync ? 1 : 0;
    f.bytes += e.bytes;
    f.writes += e.sync ? 0 : 1;
    s.files[e.file] = f;
    steps.set(e.step, s);
  }
  return [...steps.values()].map((s) => ({
    ...s,
    perOrder: {
      dbSyncs: s.dbSyncs / orders,
      dbBytes: s.dbBytes / orders,
      otherSyncs: s.otherSyncs / orders,
      otherBytes: s.otherBytes / orders,
    },
  }));
}
