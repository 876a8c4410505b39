/**
 * A Prometheus histogram kept in memory for this run (cumulative buckets, _sum, _count). Series are
 * created up front for the label sets named at construction, so every one is scraped from the start.
 */
export interface Histogram {
  observe(labels: Record<string, string>, seconds: number): void;
  /** Exposition lines (HELP, TYPE, samples). */
  render(): string[];
}

interface Series {
  labels: Record<string, string>;
  counts: number[];
  sum: number;
  count: number;
}

export function createHistogram(options: {
  name: string;
  help: string;
  buckets: readonly number[];
  initialLabels?: Record<string, string>[];
}): Histogram {
  const buckets = [...options.buckets].sort((a, b) => a - b);
  const series = new Map<string, Series>();
  // Label names are ASCII identifiers: a plain comparison orders them. localeCompare would load ICU's
  // collator on the first call, ~10 ms of CPU at every start (docs/benchmarks.md).
  const keyOf = (labels: Record<string, string>) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const seriesFor = (labels: Record<string, string>) => {
    const key = keyOf(labels);
    let found = series.get(key);
    if (!found) {
      found = { labels, counts: buckets.map(() => 0), sum: 0, count: 0 };
      series.set(key, found);
    }
    return found;
  };
  for (const labels of options.initialLabels ?? [{}]) seriesFor(labels);

  return {
    observe(labels, seconds) {
      if (!Number.isFinite(seconds) || seconds < 0) return;
      const s = seriesFor(labels);
      for (let i = 0; i < buckets.length; i += 1) if (seconds <= buckets[i]!) s.counts[i]! += 1;
      s.sum += seconds;
      s.count += 1;
    },
    render() {
      const lines = [`# HELP ${options.name} ${options.help}`, `# TYPE ${options.name} histogram`];
      for (const s of series.values()) {
        buckets.forEach((le, i) => lines.push(`${options.name}_bucket${labelText({ ...s.labels, le: String(le) })} ${s.counts[i]}`));
        lines.push(`${options.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.count}`);
        lines.push(`${options.name}_sum${labelText(s.labels)} ${s.sum}`);
        lines.push(`${options.name}_count${labelText(s.labels)} ${s.count}`);
      }
      return lines;
    },
  };
}

/** `{a="1",b="x"}` with the exposition format's escapes; empty for no labels. */
export function labelText(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}
