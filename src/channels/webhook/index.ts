/**
 * The webhook channel: a fastify listener on the tunnel port (raw body, verify, store once, 2xx
 * fast), the durable inbox in `webhook_events`, and the worker that re-reads each event's object and
 * observes it. The Events API backfill (../backfill.ts) feeds the same inbox.
 */
export { createWebhookServer, SKEW_WARN_SEC, type WebhookServer, type WebhookServerDeps, type WebhookServerSettings } from './server.js';
export { createWebhookInbox, isHandledEvent, type WebhookInbox, type InboxRow, type InboxSource } from './inbox.js';
export {
  createWebhookWorker,
  stuckAlarmName,
  type WebhookWorker,
  type WebhookWorkerDeps,
  type WebhookWorkerSettings,
  type ReplayReport,
  type RowOutcome,
} from './worker.js';
export { dateSkewSec } from './verify.js';
export {
  createWebhookChannel,
  type WebhookChannel,
  type WebhookChannelDeps,
  type WebhookChannelSettings,
  type LocalDelivery,
} from './channel.js';
export { createBrokerIngest, type BrokerIngest, type BrokerIngestDeps, type BrokerDelivery } from './broker-ingest.js';
export { createClockSkewAlarm, CLOCK_SKEW_ALARM, type ClockSkew } from './clock-skew.js';
export { refundsSeenIn, withRefundEvidence, referencedInvoicesIn } from './refund-evidence.js';
export { refundClaimPendingIn } from './refund-claims.js';
