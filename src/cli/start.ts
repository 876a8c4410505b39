import { loadSettings, type PortOverrides, type Settings } from '../settings/index.js';
import { createApp } from '../app.js';
import { createServiceLogger, pickLogFormat } from '../util/logger.js';
import { nodeSupport, maintainedNodeLines } from '../util/node-support.js';
import { describeStartError } from './start-errors.js';
import { describeStorageStartError } from './storage-errors.js';
import { qrTerminal } from '../kiosk/index.js';
import { buildInfo } from '../version.js';
import { type CliIo, EXIT, print, serveUntilStopped, UsageError } from './io.js';

/** `--lan`: the sandbox pay page on the LAN (its own port, 8090 unless the settings name one). */
function withLanPayPage(settings: Readonly<Settings>): Readonly<Settings> {
  if (settings.provider.name !== 'sandbox')
    throw new UsageError(`--lan is for the sandbox demo; provider ${settings.provider.name} shows its own pay page`);
  return Object.freeze({
    ...settings,
    provider: Object.freeze({ ...settings.provider, sandboxLanPort: settings.provider.sandboxLanPort || DEMO_LAN_PORT }),
  });
}

const DEMO_LAN_PORT = 8090;
import { InstanceLockedError } from '../store/index.js';
import { PortInUseError } from '../util/http-listener.js';
import { HardwareStartError } from '../hardware/index.js';

/** `vendgate start [--config FILE]`: runs the service until SIGTERM/SIGINT. */
export async function startCommand(
  options: { config?: string; lan?: boolean; ports?: PortOverrides; provider?: string },
  io: CliIo,
  extra: { crashPoint?: (name: string) => void } = {},
): Promise<number> {
  const loaded = loadSettings({ path: options.config, env: io.env, ports: options.ports });
  let settings = options.lan ? withLanPayPage(loaded.settings) : loaded.settings;
  // The demo with a real adapter against its simulator, in this process (start-simulated.ts).
  const simulated = options.provider
    ? await (await import('./start-simulated.js')).withSimulatedProvider(settings, options.provider)
    : null;
  if (simulated) settings = simulated.settings;
  const logger = await createServiceLogger({ level: settings.log.level, destination: io.stdout, format: pickLogFormat(io.env, io.stdout) });
  logger.info({ config: loaded.source, environment: loaded.environment, ...buildInfo() }, 'settings loaded');
  const node = nodeSupport(process.version, Date.now());
  if (node.status !== 'supported') {
    logger.warn(
      { node: process.version, endOfLife: node.endOfLife, supported: maintainedNodeLines(Date.now()) },
      node.status === 'end_of_life'
        ? 'this Node.js line is past its end of life (no security fixes): install a supported LTS'
        : 'this Node.js line was not tested with vendgate',
    );
  }
  const app = createApp(settings, {
    logger,
    crashPoint: extra.crashPoint,
    configSource: loaded.source,
    configEnvironment: loaded.environment,
  });
  if (simulated)
    logger.info({ provider: settings.provider.name, simulator: simulated.url }, 'demo: provider simulator started in this process');
  const stopAll = async () => {
    await app.stop();
    await simulated?.stop();
  };
  let ready: { localUrl: string };
  try {
    ready = await app.start();
  } catch (err) {
    await stopAll().catch(() => {});
    // The card or the file beneath the database: one fatal line (file, cause, next step), exit 74.
    const storage = err instanceof InstanceLockedError ? null : describeStorageStartError(err, settings.storage.path);
    if (storage) {
      logger.fatal(storage, `could not start: ${storage.message}. Next: ${storage.hint}`);
      print(io.stderr, `vendgate: could not start: ${storage.message}. Next: ${storage.hint}`);
      return EXIT.STORAGE;
    }
    // A setting or another program, not a bug: the sentence and what to do, no stack trace.
    const problem = describeStartError(err, settings, loaded.source);
    logger.fatal(problem ?? { err }, 'could not start');
    // Another instance or a taken port: said plainly on stderr, with its own exit code (cli/index.ts).
    if (err instanceof InstanceLockedError || err instanceof PortInUseError) throw err;
    if (!problem) return EXIT.FAILURE;
    print(io.stderr, `vendgate: could not start: ${problem.message} — ${problem.hint}`);
    // Missing hardware is the machine's configuration, not a crash: systemd does not restart on 78.
    return err instanceof HardwareStartError ? EXIT.CONFIG : EXIT.FAILURE;
  }
  if (io.isTty) {
    print(io.stderr, `\nvendgate is running. Kiosk page: ${ready.localUrl}/\n`);
    if (settings.provider.sandboxLanPort > 0)
      print(
        io.stderr,
        `Phones on this network open the QR's pay page on port ${settings.provider.sandboxLanPort} of this machine (allow it in a firewall).\n`,
      );
    // Show each new order's QR in the terminal, so the demo can be paid from a phone or a second window.
    const shown = new Set<number>();
    app
      .context()
      .view.kioskDeps(undefined)
      .subscribe((state) => {
        const order = state.order;
        const payUrl = order?.payUrl;
        if (!order || !payUrl || order.state !== 'awaiting_payment' || shown.has(order.orderId)) return;
        shown.add(order.orderId);
        // Loaded on the first order, not at start-up: start-up to ready stays short.
        qrTerminal(payUrl)
          .then((qr) => print(io.stderr, `\nOrder ${order.reference}: ${order.amount} ${order.currency} — pay at ${order.payUrl}\n${qr}`))
          .catch(() => {});
      });
  }
  return serveUntilStopped(io, logger, stopAll);
}
