/**
 * node:fs/promises, loaded at its first use. Importing it loads ten of Node's modules (the file
 * handles, directory and watcher code, readline's interface for `readLines`) that a start in most
 * settings never uses: the sysfs GPIO chips, a serial device's check and the sandbox's pay-page
 * assets read files later, if at all (docs/benchmarks.md). The MQTT telemetry, which reads every
 * minute on every device with MQTT, uses node:fs's callbacks instead.
 */
export function fsPromises(): typeof import('node:fs/promises') {
  return process.getBuiltinModule('node:fs/promises');
}

/**
 * node:child_process (with dgram and cluster under it), loaded by the first gpioset relay's spawn:
 * a device without GPIO relays (sim, serial, MDB) never needs it (~10 ms of CPU at start,
 * docs/benchmarks.md).
 */
export function childProcess(): typeof import('node:child_process') {
  return process.getBuiltinModule('node:child_process');
}
