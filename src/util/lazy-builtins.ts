/**
 * node:fs/promises, loaded at its first use. Importing it loads ten of Node's modules (the file
 * handles, directory and watcher code, readline's interface for `readLines`) that a start in most
 * settings never uses: the sysfs GPIO chips, a serial device's check, the sandbox's pay-page assets
 * and the MQTT telemetry's disk figures read files later, if at all (docs/benchmarks.md).
 */
export function fsPromises(): typeof import('node:fs/promises') {
  return process.getBuiltinModule('node:fs/promises');
}
