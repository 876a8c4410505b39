import QRCode from 'qrcode';
import { loadSettings } from '../settings/index.js';
import { createApp } from '../app.js';
import { createLogger } from '../util/logger.js';
import { type CliIo, EXIT, print } from './io.js';
import { InstanceLockedError } from '../store/index.js';
import { PortInUseError } from '../util/http-listener.js';

/** `vendgate start [--config FILE]`: runs the service until SIGTERM/SIGINT. */
export async function startCommand(options: { config?: string }, io: CliIo, extra: { crashPoint?: (name: string) => void } = {}): Promise<number> {
  const loaded = loadSettings({ path: options.config, env: io.env });
  const { settings } = loaded;
  const logger = createLogger({ level: settings.log.level, destination: io.stdout });
  logger.info({ config: loaded.source, environment: loaded.environment }, 'settings loaded');
  const app = createApp(settings, { logger, crashPoint: extra.crashPoint, configSource: loaded.source, configEnvironment: loaded.environment });
  let ready: { localUrl: string };
  try {
    ready = await app.start();
  } catch (err) {
    await app.stop().catch(() => {});
    // Another instance or a taken port: said plainly on stderr, with its own exit code (cli/index.ts).
    if (err instanceof InstanceLockedError || err instanceof PortInUseError) throw err;
    logger.fatal({ err }, 'could not start');
    return EXIT.FAILURE;
  }
  if (io.isTty) {
    print(io.stderr, `\nvendgate is running. Kiosk page: ${ready.localUrl}/\n`);
    // Show each new order's QR in the terminal, so the demo can be paid from a phone or a second window.
    const shown = new Set<number>();
    app.context().view.kioskDeps(undefined).subscribe((state) => {
      const order = state.order;
      if (!order?.payUrl || order.state !== 'awaiting_payment' || shown.has(order.orderId)) return;
      shown.add(order.orderId);
      QRCode.toString(order.payUrl, { type: 'terminal', small: true })
        .then((qr) => print(io.stderr, `\nOrder ${order.reference}: ${order.amount} ${order.currency} — pay at ${order.payUrl}\n${qr}`))
        .catch(() => {});
    });
  }
  io.notify('READY=1');
  const signal = await io.stopSignal;
  logger.info({ signal }, 'stop requested');
  io.notify('STOPPING=1');
  await app.stop();
  return EXIT.OK;
}
