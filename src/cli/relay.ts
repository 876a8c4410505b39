import { loadRelaySettings } from '../settings/fleet-relay/index.js';
import { createLogger } from '../util/logger.js';
import { type CliIo, EXIT, serveUntilStopped } from './io.js';

/** `vendgate relay [--config FILE]`: the fleet's webhook receiver, until SIGTERM/SIGINT. */
export async function relayCommand(options: { config?: string }, io: CliIo): Promise<number> {
  const loaded = loadRelaySettings({ path: options.config, env: io.env });
  const logger = createLogger({ level: loaded.settings.log.level, destination: io.stdout });
  logger.info({ config: loaded.source, environment: loaded.environment }, 'relay settings loaded');
  const { createRelay } = await import('../fleet-relay/index.js');
  const relay = createRelay(loaded.settings, { logger });
  try {
    await relay.start();
  } catch (err) {
    logger.fatal({ err }, 'relay could not start');
    await relay.stop().catch(() => {});
    return EXIT.FAILURE;
  }
  return serveUntilStopped(io, logger, () => relay.stop());
}
