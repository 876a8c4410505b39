#!/usr/bin/env node
/**
 * What the service allocates per order, by the function that allocated it: every byte, also what a
 * scavenge or a full collection took back since (V8's sampling heap profiler with
 * includeObjectsCollectedBy{Minor,Major}GC, over the inspector protocol). The garbage collector's
 * pauses are the tail of paid → actuation: the fewer bytes an order allocates, the fewer scavenges,
 * the less is promoted to the old generation, and the fewer full collections land in a vend's window.
 *
 *   node scripts/bench/allocations.mjs [--orders 200] [--idle-sec 0] [--baseline REF,…]     (after npm run build)
 *
 * The stack of actuation.mjs (this build as its unit starts it, Gerege at a simulator in a process of
 * its own, the sim actuator, the embedded broker, the screen's event stream), orders one after the
 * other. `--idle-sec N`: N seconds without orders instead (what the timers allocate). `--baseline`:
 * the same for each commit named, built as startup.mjs builds it, one after the other (bytes do not
 * depend on the machine's load).
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { freePort } from '../soak/service.mjs';
import { oneOrder, startStack } from './actuation.mjs';
import { machine, sleep } from './lib.mjs';
import { buildOf } from './startup.mjs';

/** The inspector of the process listening on `port`: `call(method, params)` → its result. */
async function inspector(port) {
  const [target] = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  // Node's own WebSocket client (global from Node 22; Node 20 behind --experimental-websocket, below).
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true });
    ws.addEventListener('error', reject, { once: true });
  });
  let next = 0;
  const waiting = new Map();
  ws.addEventListener('message', ({ data }) => {
    const message = JSON.parse(String(data));
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  return {
    call(method, params = {}) {
      return new Promise((resolve, reject) => {
        next += 1;
        waiting.set(next, (message) =>
          message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result),
        );
        ws.send(JSON.stringify({ id: next, method, params }));
      });
    },
    close: () => ws.close(),
  };
}

/** Self bytes by allocating function, and by the last three frames of ours or of a package. */
export function allocationTable(profile) {
  const byFunction = new Map();
  const byStack = new Map();
  let total = 0;
  const where = (frame) =>
    `${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\/(node_modules|dist)\//, '$1/')}:${frame.lineNumber}`;
  const walk = (node, frames) => {
    const path = [...frames, node.callFrame];
    total += node.selfSize;
    const own = where(node.callFrame);
    byFunction.set(own, (byFunction.get(own) ?? 0) + node.selfSize);
    const ours = path
      .filter((frame) => /\/(dist|node_modules)\//.test(frame.url))
      .slice(-3)
      .map(where)
      .join(' < ');
    byStack.set(ours, (byStack.get(ours) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, path);
  };
  walk(profile.head, []);
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
  return { total, byFunction: sorted(byFunction), byStack: sorted(byStack) };
}

if (import.meta.url === `file://${process.argv[1]}` && typeof globalThis.WebSocket !== 'function') {
  // Node 20: the same script again, with its WebSocket client turned on.
  const again = spawnSync(process.execPath, ['--experimental-websocket', '--no-warnings', ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(again.status ?? 1);
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      orders: { type: 'string', default: '200' },
      'idle-sec': { type: 'string', default: '0' },
      baseline: { type: 'string', default: '' },
    },
  });
  const orders = Number(values.orders);
  const idleSec = Number(values['idle-sec']);
  for (const ref of ['this build', ...values.baseline.split(',').filter(Boolean)])
    await measure(
      buildOf(ref, (line) => process.stderr.write(`bench: ${line}\n`)),
      orders,
      idleSec,
    );
}

async function measure(build, orders, idleSec) {
  const port = await freePort();
  const stack = await startStack({ ...build, label: 'allocations', nodeArgs: [...build.nodeArgs, `--inspect=127.0.0.1:${port}`] });
  const devtools = await inspector(port);
  try {
    for (let i = 0; i < 10; i += 1) await oneOrder(stack); // warm-up: first QR, compiled paths
    await devtools.call('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    if (idleSec > 0) await sleep(idleSec * 1000);
    else for (let i = 0; i < orders; i += 1) await oneOrder(stack);
    const { profile } = await devtools.call('HeapProfiler.stopSampling');
    const per = idleSec > 0 ? idleSec : orders;
    const unit = idleSec > 0 ? 'idle second' : 'order';
    const kb = (bytes) => `${(bytes / per / 1024).toFixed(1).padStart(7)} KB`;
    const table = allocationTable(profile);
    process.stdout.write(
      `\n${build.label}: ${JSON.stringify(machine())} ${new Date().toISOString()}\nallocated: ${kb(table.total).trim()} per ${unit} (${per} ${unit}s)\n\nby function:\n`,
    );
    for (const [name, bytes] of table.byFunction.slice(0, 25)) process.stdout.write(`${kb(bytes)}  ${name}\n`);
    process.stdout.write('\nby the last three frames of ours or of a package:\n');
    for (const [name, bytes] of table.byStack.slice(0, 25)) process.stdout.write(`${kb(bytes)}  ${name.slice(0, 240)}\n`);
  } finally {
    devtools.close();
    await stack.stop();
  }
}
