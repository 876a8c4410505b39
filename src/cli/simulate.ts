import { createSimulator } from '../simulator/index.js';
import { describeSimulator } from '../simulator/index.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

/** `vendgate simulate --provider gerege|qutpay|qpay|kaspi [--port N] [--webhook-url URL] [--faults JSON]`. */
export async function simulateCommand(
  options: { provider?: string; port?: string; webhookUrl?: string; host?: string; faults?: string; seed?: string },
  io: CliIo,
): Promise<number> {
  const provider = options.provider ?? 'gerege';
  if (provider !== 'gerege' && provider !== 'qutpay' && provider !== 'qpay' && provider !== 'kaspi')
    throw new UsageError('--provider must be gerege, qutpay, qpay or kaspi');
  const port = options.port ? Number(options.port) : 9090;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError('--port must be a TCP port number');
  let faults: Record<string, unknown> | undefined;
  if (options.faults) {
    try {
      faults = JSON.parse(options.faults) as Record<string, unknown>;
    } catch {
      throw new UsageError('--faults must be JSON, e.g. {"rateLimit":0.1,"duplicateWebhook":0.3}');
    }
  }
  const simulator = createSimulator({
    provider,
    port,
    host: options.host ?? '127.0.0.1',
    webhookUrl: options.webhookUrl,
    seed: options.seed ? Number(options.seed) : undefined,
    faults: faults as never,
  });
  await simulator.start();
  print(io.stdout, describeSimulator(simulator));
  io.notify('READY=1');
  await io.stopSignal;
  await simulator.stop();
  return EXIT.OK;
}
