import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A unit's `MemoryMax=` for the processes a bench starts, as systemd gives it on a device whose kernel
 * has the memory controller on: node sizes V8's heap from its cgroup's limit when no V8 flag does (for
 * 256 MB: 128 MB of old generation and a 1 MB young one). Each process gets a memory cgroup (v1) of its
 * own with the limit: the bench moves itself into it for the fork, so the child starts inside it, and
 * moves back. A build whose unit sizes the heap by flags (the releases before the eleventh round) is
 * sized by its flags inside it alike.
 */
const V1 = '/sys/fs/cgroup/memory';
let limit = null;
let home = null;
let count = 0;
const groups = [];

/** From now on, every process started through `held()` gets its own cgroup limited to `bytes`. False (and why, through `log`) where it cannot be done: not root, no cgroup v1 memory hierarchy. */
export function holdChildrenTo(bytes, log) {
  if (!bytes) return false;
  try {
    const mine = /^\d+:memory:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
    if (mine === undefined) throw new Error('no cgroup v1 memory hierarchy');
    home = join(V1, mine);
    const probe = join(V1, `vendgate-bench-${process.pid}-probe`);
    mkdirSync(probe);
    writeFileSync(join(probe, 'memory.limit_in_bytes'), String(bytes));
    rmdirSync(probe);
  } catch (err) {
    log(
      `cannot apply the unit's MemoryMax=${bytes / 1024 / 1024}M (${err instanceof Error ? err.message : String(err)}): ` +
        "V8 sizes the services' heaps from this machine's RAM, not as on a device",
    );
    return false;
  }
  limit = bytes;
  process.once('exit', () => {
    for (const group of groups)
      try {
        rmdirSync(group);
      } catch {
        /* a process still in it */
      }
  });
  log(`each service started in a memory cgroup of its own with the unit's MemoryMax=${bytes / 1024 / 1024}M`);
  return true;
}

/** `start()` (a synchronous spawn) with the child in a fresh cgroup under the limit, when `holdChildrenTo` applied one. */
export function held(start) {
  if (limit === null) return start();
  const group = join(V1, `vendgate-bench-${process.pid}-${count++}`);
  mkdirSync(group);
  groups.push(group);
  writeFileSync(join(group, 'memory.limit_in_bytes'), String(limit));
  writeFileSync(join(group, 'cgroup.procs'), String(process.pid));
  try {
    return start();
  } finally {
    writeFileSync(join(home, 'cgroup.procs'), String(process.pid));
  }
}
