export { createMqtt } from './service.js';
export {
  startEmbeddedBroker,
  embeddedRefusal,
  embeddedInstance,
  type EmbeddedBroker,
  type EmbeddedRefusal,
  type EmbeddedInstance,
} from './embedded-broker.js';
export { CommandErrorCodes, COMMAND_NAMES, SELFTEST_REUSE_MS, type CommandResult } from './commands.js';
export type { UnverifiedSummary } from './command-tally.js';
export { type CommandResults } from './command-results.js';
export { createTopics, type Topics } from './topics.js';
export { MqttConfigError } from './connection.js';
export type {
  CommandAudit,
  DeviceControl,
  DeviceTelemetry,
  CatalogControl,
  DexControl,
  DeviceStateSummary,
  Mqtt,
  MqttDeps,
  MqttSettings,
} from './types.js';
export {
  checkMqttRoundTrip,
  publishSelftestResult,
  brokerUrl,
  embeddedBrokerIdentity,
  type MqttCheckResult,
  type MqttCheckFailure,
} from './check.js';
export {
  createBrokerWebhookSubscription,
  webhookClientId,
  type BrokerWebhookSubscription,
  type BrokerWebhookDeps,
  type BrokerIngestOutcome,
} from './webhook-subscription.js';
export {
  createFleetTopics,
  encodeWebhookMessage,
  decodeWebhookMessage,
  pickForwardedHeaders,
  parseRouteAnnouncement,
  readRouteAnnouncement,
  ROUTE_MAX_BYTES,
  ROUTE_MAX_PREFIXES,
  FleetWireError,
  ROUTE_VERSION,
  type FleetTopics,
  type ForwardedHeaders,
  type RouteAnnouncement,
  type RouteDropReason,
} from './fleet-wire.js';
export {
  createRelayConnection,
  relayClientId,
  relaySyncTopic,
  PublishNotAcknowledged,
  type RelayConnection,
  type RelayConnectionDeps,
} from './fleet-relay-connection.js';
export {
  signCommand,
  verifyCommand,
  orderReference,
  generateOperatorKey,
  publicKeyOf,
  SIGNED_COMMANDS,
  EnvelopeErrorCodes,
  ENVELOPE_VERSION,
  type CommandEnvelope,
  type CommandAuthSettings,
  type OperatorKey,
} from './command-envelope.js';
export { sendCommand, learnDatabase } from './command-client.js';
export { redactUrl as withoutLogin } from './connection.js';
export { answerKeyPath, readAnswerPublicKey, verifyAnswer, loadOrCreateAnswerKey, ANSWER_KEY_FILE, type AnswerKey } from './answer-key.js';
