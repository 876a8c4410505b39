/**
 * /metrics, by hand rather than with prom-client: a dozen series and two histograms are ~150 lines,
 * where prom-client would add a registry, its default collectors (event-loop and GC observers
 * running all the time on a Zero 2 W) and two dependencies for the same text.
 */
import { buildInfo } from '../version.js';
import { salesFamilies, type SalesSnapshot } from './sales.js';
import { createHistogram, labelText, type Histogram } from './histogram.js';
import { processMetricLines } from './process.js';

export { createHistogram, labelText, type Histogram } from './histogram.js';

/**
 * The money path's counters (outbox.count names, kept in SQLite since the database was created) as
 * Prometheus counters: one metric per thing counted, a label where the things are outcomes of one.
 */
export const COUNTER_METRICS: Record<string, { metric: string; help: string; labels?: Record<string, string> }> = {
  orders_created: { metric: 'vendgate_orders_created_total', help: 'Orders created.' },
  orders_paid: { metric: 'vendgate_orders_paid_total', help: 'Orders whose invoice was seen paid (or authorized).' },
  vends_succeeded: { metric: 'vendgate_vends_total', help: 'Vends by outcome.', labels: { result: 'succeeded' } },
  vends_failed: { metric: 'vendgate_vends_total', help: 'Vends by outcome.', labels: { result: 'failed' } },
  vends_uncertain: { metric: 'vendgate_vends_total', help: 'Vends by outcome.', labels: { result: 'uncertain' } },
  refunds_requested: { metric: 'vendgate_refunds_total', help: 'Refunds by stage.', labels: { result: 'requested' } },
  refunds_succeeded: { metric: 'vendgate_refunds_total', help: 'Refunds by stage.', labels: { result: 'succeeded' } },
  outbox_dropped: {
    metric: 'vendgate_mqtt_messages_dropped_total',
    help: 'MQTT events dropped because the outbox was full (never alarms).',
  },
  outbox_rejected: { metric: 'vendgate_mqtt_messages_rejected_total', help: 'MQTT messages the broker refused.' },
  receipts_issued: { metric: 'vendgate_receipts_total', help: 'Fiscal receipts the register issued, by kind.', labels: { kind: 'sale' } },
  receipts_returned: {
    metric: 'vendgate_receipts_total',
    help: 'Fiscal receipts the register issued, by kind.',
    labels: { kind: 'return' },
  },
};

/** Paid → end of the vend: seconds a customer waits once the money is seen. */
const PAID_TO_ACTUATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const PROVIDER_REQUEST_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface MetricsSnapshot {
  counters: Record<string, number>;
  ordersByState: Record<string, number>;
  outboxDepth: number;
  openAlarms: number;
  providerReachable: boolean;
  /** Counted items per slot; null where a slot was never refilled (not counted). */
  stock: Record<string, number | null>;
  /** Fiscal receipts owed (absent with no register). */
  receipts?: { pending: number; oldestAgeSec: number; reachable: boolean };
  /** Sales figures from the orders (counts and sums, today and in total). */
  sales?: SalesSnapshot;
}

export interface Metrics {
  /** One finished vend: `seconds` from the paid observation to the actuator's answer. */
  observeVend(result: string, seconds: number): void;
  /** One HTTP attempt to the payment provider. */
  observeProviderRequest(sample: { method: string; outcome: 'ok' | 'error'; seconds: number }): void;
  render(snapshot: MetricsSnapshot): string;
}

export function createMetrics(options: { provider: string }): Metrics {
  const paidToActuation = createHistogram({
    name: 'vendgate_paid_to_actuation_seconds',
    help: 'From the paid observation of an order to the end of its vend, in seconds (this run).',
    buckets: PAID_TO_ACTUATION_BUCKETS,
    initialLabels: ['vended', 'failed', 'uncertain'].map((result) => ({ result })),
  });
  const providerRequests: Histogram = createHistogram({
    name: 'vendgate_provider_request_duration_seconds',
    help: 'One HTTP request to the payment provider, in seconds (this run).',
    buckets: PROVIDER_REQUEST_BUCKETS,
    initialLabels: ['GET', 'POST'].flatMap((method) => ['ok', 'error'].map((outcome) => ({ provider: options.provider, method, outcome }))),
  });

  return {
    observeVend(result, seconds) {
      const bucket = result === 'vended' ? 'vended' : result === 'failed' || result === 'not_passed' ? 'failed' : 'uncertain';
      paidToActuation.observe({ result: bucket }, seconds);
    },
    observeProviderRequest(sample) {
      providerRequests.observe({ provider: options.provider, method: sample.method, outcome: sample.outcome }, sample.seconds);
    },
    render(snapshot) {
      const lines: string[] = [];
      const family = (name: string, help: string, type: 'gauge' | 'counter', samples: [Record<string, string>, number][]) => {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
        for (const [labels, value] of samples) lines.push(`${name}${labelText(labels)} ${value}`);
      };
      const info = buildInfo();
      family('vendgate_build_info', 'The release this device runs (always 1).', 'gauge', [
        [{ version: info.version, commit: info.commit, node: info.node }, 1],
      ]);

      const byMetric = new Map<string, { help: string; samples: [Record<string, string>, number][] }>();
      for (const [counter, spec] of Object.entries(COUNTER_METRICS)) {
        const entry = byMetric.get(spec.metric) ?? { help: spec.help, samples: [] };
        entry.samples.push([spec.labels ?? {}, snapshot.counters[counter] ?? 0]);
        byMetric.set(spec.metric, entry);
      }
      for (const [metric, { help, samples }] of byMetric) family(metric, `${help} Since the database was created.`, 'counter', samples);

      family(
        'vendgate_orders',
        'Orders by current state.',
        'gauge',
        Object.entries(snapshot.ordersByState).map(([state, n]) => [{ state }, n]),
      );
      family('vendgate_mqtt_outbox_messages', 'MQTT messages not yet acknowledged by the broker.', 'gauge', [[{}, snapshot.outboxDepth]]);
      family('vendgate_open_alarms', 'Alarms waiting for a person.', 'gauge', [[{}, snapshot.openAlarms]]);
      family('vendgate_provider_up', '1 when the payment provider answers.', 'gauge', [[{}, snapshot.providerReachable ? 1 : 0]]);
      family(
        'vendgate_slot_stock',
        'Counted stock per slot (slots never refilled are not counted).',
        'gauge',
        Object.entries(snapshot.stock)
          .filter((entry): entry is [string, number] => entry[1] !== null)
          .map(([slot, n]) => [{ slot }, n]),
      );
      if (snapshot.receipts) {
        family('vendgate_receipts_pending', 'Fiscal receipts owed: queued, being sent or with an unknown outcome.', 'gauge', [
          [{}, snapshot.receipts.pending],
        ]);
        family('vendgate_receipts_oldest_pending_age_seconds', 'Age of the oldest fiscal receipt owed, in seconds (0: none).', 'gauge', [
          [{}, snapshot.receipts.oldestAgeSec],
        ]);
        family('vendgate_fiscal_register_up', '1 when the fiscal register answers.', 'gauge', [[{}, snapshot.receipts.reachable ? 1 : 0]]);
      }
      if (snapshot.sales) salesFamilies(family, snapshot.sales);
      lines.push(...paidToActuation.render(), ...providerRequests.render(), ...processMetricLines());
      return `${lines.join('\n')}\n`;
    },
  };
}
