export { createMqtt } from './service.js';
export { startEmbeddedBroker, embeddedRefusal, type EmbeddedBroker, type EmbeddedRefusal } from './embedded-broker.js';
export { CommandErrorCodes, COMMAND_NAMES, type CommandResult } from './commands.js';
export { createTopics, type Topics } from './topics.js';
export { MqttConfigError } from './connection.js';
export type {
  CommandAudit,
  DeviceControl,
  DeviceTelemetry,
  CatalogControl,
  DeviceStateSummary,
  Mqtt,
  MqttDeps,
  MqttSettings,
} from './types.js';
export { checkMqttRoundTrip, publishSelftestResult, brokerUrl, type MqttCheckResult, type MqttCheckFailure } from './check.js';
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
  FleetWireError,
  FORWARDED_HEADERS,
  ROUTE_VERSION,
  type FleetTopics,
  type ForwardedHeaders,
  type RouteAnnouncement,
} from './fleet-wire.js';
export {
  createRelayConnection,
  relayClientId,
  relaySyncTopic,
  PublishNotAcknowledged,
  type RelayConnection,
  type RelayConnectionDeps,
} from './relay-connection.js';
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
