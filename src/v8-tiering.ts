/**
 * V8's compilers for the long-running service, set by the process itself instead of on node's
 * command line.
 *
 * Node 22 carries compiled code for its own modules (http, crypto, net, its module loader…) and
 * checks it against V8's flags: with any V8 flag on the command line it rejects all of it, and a
 * start compiles ~99 built-in modules from source (~30–40 ms of a start on a 2-core Xeon,
 * docs/benchmarks.md, eleventh round). Flags set here, once the built-ins a start needs are loaded,
 * cost only the few modules loaded after them.
 *
 * What is set, and why (docs/benchmarks.md, ninth and tenth rounds):
 * - `--no-sparkplug`: V8's baseline compiler compiled every function a start ran a few times (zod,
 *   fastify, the module loader) and kept that code for the life of the process (~1.5 MB idle).
 * - `--invocation-count-for-turbofan=80000` (V8 12 and later; Node 20's V8 does not know it): a
 *   function reaches the optimizing compiler after 80,000 calls' worth of running instead of 3,000.
 *   The first optimized compile pages ~6 MB of node's own machine code (the compiler) in for good,
 *   and at a vending machine's pace an order's functions do not run that often.
 * - `--no-turbofan` until the service is ready, `--turbofan` after: Node's path functions (its ES
 *   module loader resolving each chunk, one call per character of the path) were given their
 *   3,000-call budgets while node started, before any flag here; a start would spend those. With the
 *   compiler off, spending one gives the function a new budget under the 80,000 count instead.
 *
 * A flag the operator put on node's command line wins: the compiler is not switched back on after
 * `--no-turbofan`/`--no-opt`/`--jitless`, and `--sparkplug` is left alone.
 */

/** Node's public built-in modules a start of the service loads (with or without MQTT, the demo's sim hardware and a provider's HTTP). */
export const START_BUILTINS = [
  'node:module',
  'node:net',
  'node:tty',
  'node:crypto',
  'node:os',
  'node:http',
  'node:assert',
  'node:dns',
  'node:perf_hooks',
  'node:dgram',
  'node:child_process',
  'node:cluster',
] as const;

/** The count above which V8 hands a function to its optimizing compiler while the service runs. */
export const TURBOFAN_INVOCATION_COUNT = 80_000;

export interface ServiceTiering {
  /** The flags this process set (for the log and the tests). */
  readonly flags: readonly string[];
  /** After READY=1: the optimizing compiler on again (unless the command line turned it off). */
  afterReady(): void;
}

// V8 takes `--no_turbofan` for `--no-turbofan`.
const mentions = (options: readonly string[], pattern: RegExp): boolean =>
  options.some((option) => pattern.test(option.replace(/_/g, '-')));

/**
 * Loads the built-ins a start needs, then sets the flags. Call once, before the service's own
 * modules are imported. `nodeOptions`: what node was started with (`process.execArgv` and the words
 * of NODE_OPTIONS), whose V8 flags win over these.
 */
export function tierForService(nodeOptions: readonly string[] = process.execArgv, v8Version: string = process.versions.v8): ServiceTiering {
  for (const name of START_BUILTINS) process.getBuiltinModule(name);
  const { setFlagsFromString } = process.getBuiltinModule('node:v8');
  const compilerOff = mentions(nodeOptions, /^--(?:no-turbofan|no-opt|jitless)$/);
  const flags: string[] = [];
  if (!mentions(nodeOptions, /^--(?:no-)?sparkplug$/)) flags.push('--no-sparkplug');
  if (Number(v8Version.split('.')[0]) >= 12 && !mentions(nodeOptions, /^--invocation-count-for-turbofan(?:=|$)/))
    flags.push(`--invocation-count-for-turbofan=${TURBOFAN_INVOCATION_COUNT}`);
  const pauseCompiler = !compilerOff && !mentions(nodeOptions, /^--turbofan$|^--opt$/);
  if (pauseCompiler) flags.push('--no-turbofan');
  for (const flag of flags) setFlagsFromString(flag);
  let resumed = !pauseCompiler;
  return {
    flags,
    afterReady() {
      if (resumed) return;
      resumed = true;
      setFlagsFromString('--turbofan');
    },
  };
}
