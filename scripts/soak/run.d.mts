/** Types of run.mjs for the TypeScript tests (the runner itself is plain ESM so `npm run soak` needs no compiler). */
export interface SoakOptions {
  orders: number;
  /** 'all', 'none', or a comma-separated list of simulator fault names (plus webhookOutage). */
  faults?: string;
  /** Mean seconds between SIGKILLs (0: none). */
  killEverySec: number;
  seed: number;
  /** MQTT broker on (default) or off. */
  mqtt?: boolean;
  /** Share of sim actuations that fail. Default 0.05. */
  failRate?: number;
  /** How long everything may take to settle after the last order. Default 120000. */
  drainTimeoutMs?: number;
  keepDir?: boolean;
  log?: (line: string) => void;
}

export interface SoakReport {
  orders: number;
  byState: Record<string, number>;
  paid: number;
  vended: number;
  refunded: number;
  uncertain: number;
  killsWhileFiring: number;
  doubleVends: number;
  paidButUnsettled: number;
  refundsLeftToPerson: number;
  invoicesPerOrder: number;
  extraInvoices: number;
  actuations: number;
  alarms: string[];
  mqtt: {
    expected: number;
    delivered: number;
    missing: number;
    conflicting: number;
    redeliveries: number;
    unknown: number;
    outboxLeft: number;
  };
  violations: string[];
  kills: number;
  restarts: number;
  wallMs: number;
  ordersPerSec: number;
  [key: string]: unknown;
}

export const FAULTS_ALL: Record<string, number>;
export function parseFaults(spec: string): Record<string, number | boolean>;
export function runSoak(options: SoakOptions): Promise<SoakReport>;
