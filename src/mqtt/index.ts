export { createMqtt } from './service.js';
export {
  startEmbeddedBroker,
  embeddedRefusal,
  embeddedInstance,
  type EmbeddedBroker,
  type EmbeddedRefusal,
  type EmbeddedInstance,
} from './embedded-broker.js';
export { CommandErrorCodes, type CommandResult } from './commands/answers.js';
export { COMMAND_NAMES } from './commands/table.js';
export { SELFTEST_REUSE_MS } from './commands/families/device.js';
export type { UnverifiedSummary } from './commands/tally.js';
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
  orderReference,
  SIGNED_COMMANDS,
  EnvelopeErrorCodes,
  ENVELOPE_VERSION,
  type CommandEnvelope,
  type CommandAuthSettings,
  type OperatorKey,
} from './commands/envelope.js';
export { signCommand, generateOperatorKey, publicKeyOf } from './commands/signing.js';
export { verifyCommand } from './commands/verify.js';
export { sendCommand, learnDatabase } from './command-client.js';
export { redactUrl as withoutLogin } from './connection.js';
export { answerKeyPath, readAnswerPublicKey, verifyAnswer, loadOrCreateAnswerKey, ANSWER_KEY_FILE, type AnswerKey } from './answer-key.js';
