import { readdirSync } from 'node:fs';

/**
 * The process metrics every Prometheus client library exports under the same names, so the usual
 * dashboards and alerts work: start time, CPU, resident memory, open file descriptors, V8 heap.
 */
export function processMetricLines(): string[] {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  const lines: string[] = [];
  const gauge = (name: string, help: string, type: 'gauge' | 'counter', value: number) =>
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  gauge(
    'process_start_time_seconds',
    'Start time of the process since the Unix epoch, in seconds.',
    'gauge',
    Math.round((Date.now() - process.uptime() * 1000) / 10) / 100,
  );
  gauge('process_cpu_user_seconds_total', 'User CPU time spent, in seconds.', 'counter', cpu.user / 1e6);
  gauge('process_cpu_system_seconds_total', 'System CPU time spent, in seconds.', 'counter', cpu.system / 1e6);
  gauge('process_cpu_seconds_total', 'User and system CPU time spent, in seconds.', 'counter', (cpu.user + cpu.system) / 1e6);
  gauge('process_resident_memory_bytes', 'Resident memory size, in bytes.', 'gauge', memory.rss);
  const fds = openFileDescriptors();
  if (fds !== null) gauge('process_open_fds', 'Number of open file descriptors.', 'gauge', fds);
  gauge('nodejs_heap_size_total_bytes', 'V8 heap size, in bytes.', 'gauge', memory.heapTotal);
  gauge('nodejs_heap_size_used_bytes', 'V8 heap used, in bytes.', 'gauge', memory.heapUsed);
  gauge('nodejs_external_memory_bytes', 'Memory of C++ objects bound to JavaScript (buffers, SQLite), in bytes.', 'gauge', memory.external);
  return lines;
}

/** Linux only (/proc/self/fd); null elsewhere. */
function openFileDescriptors(): number | null {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return null;
  }
}
