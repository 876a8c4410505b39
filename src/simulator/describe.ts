import type { Simulator } from './types.js';

/**
 * What `vendgate simulate` prints: where the simulator listens, its credentials, and the lines to
 * paste into a config file and the secrets environment to point a gateway at it.
 */
export function describeSimulator(sim: Simulator): string {
  const info = sim.info();
  if (info.kaspi) return [...describeKaspi(info.url, info.kaspi), '', ...describeRegisters(sim)].join('\n');
  const lines = [
    `${info.provider} simulator listening on ${info.url || '(not started)'} (${info.livemode ? 'live' : 'test'} mode)`,
    info.webhookUrl ? `webhooks are POSTed to ${info.webhookUrl}` : 'webhooks: none (no --webhook-url)',
    `pay an invoice: open ${info.url}/__sim/pay/<id> or POST ${info.url}/__sim/pay/<id>`,
    `faults: POST ${info.url}/__sim/faults {"rateLimit":0.2,...}; records: GET ${info.url}/__sim/records`,
    '',
    '# config.yaml',
    'provider:',
    `  name: ${info.provider}`,
    `  baseUrl: ${info.url}`,
  ];
  if (info.provider !== 'qutpay') lines.push(`  clientId: ${info.clientId}`);
  if (info.provider === 'qpay')
    lines.push(
      `  invoiceCode: ${info.invoiceCode}`,
      '  callbackUrl: https://<your tunnel or relay>/webhooks/qpay   # QPay calls it; unsigned',
    );
  lines.push('', '# secrets environment (e.g. /etc/vendgate/secrets.env)');
  if (info.provider !== 'qutpay') lines.push(`VENDGATE_PROVIDER_CLIENT_SECRET=${info.clientSecret}`);
  else lines.push(`VENDGATE_PROVIDER_API_KEY=${info.apiKey}`);
  if (info.provider !== 'qpay') lines.push(`VENDGATE_WEBHOOK_SECRETS=${info.webhookSecret}`);
  lines.push('', ...describeRegisters(sim));
  return lines.join('\n');
}

/** Kaspi: the device never calls it; the fleet relay's Kaspi caller does (docs/providers.md, "Kaspi QR"). */
function describeKaspi(url: string, kaspi: NonNullable<ReturnType<Simulator['info']>['kaspi']>): string[] {
  return [
    `kaspi simulator listening on ${url || '(not started)'} (test mode, ${kaspi.scheme} scheme)`,
    'webhooks: none (Kaspi QR payments are polled)',
    `pay a QR: POST ${url}/__sim/pay/<QrPaymentId>, or the test emulator POST ${url}/r3/v01/test/payment/scan then /confirm {"QrPaymentId":<id>}`,
    `faults: POST ${url}/__sim/faults {"lostResponse":0.2,...}; records: GET ${url}/__sim/records`,
    '',
    '# relay.yaml (vendgate relay: the Kaspi caller)',
    'relay:',
    '  kaspi:',
    '    enabled: true',
    `    baseUrl: ${url}`,
    `    scheme: ${kaspi.scheme}`,
    `    organizationBin: "${kaspi.organizationBin}"`,
    '    devicesFile: /etc/vendgate/kaspi-devices.json   # chmod 600',
    '',
    "# /etc/vendgate/kaspi-devices.json (one entry per machine; the secret is also the device's VENDGATE_PROVIDER_CLIENT_SECRET)",
    JSON.stringify({ devices: { 'vm-001': { deviceToken: kaspi.deviceTokens[0], secrets: ['<at least 16 random characters>'] } } }),
    ...(kaspi.apiKey ? ['', '# relay secrets environment', `VENDGATE_RELAY_KASPI_API_KEY=${kaspi.apiKey}`] : []),
    '',
    '# config.yaml of the device',
    'provider:',
    '  name: kaspi',
    '  baseUrl: https://<the relay>:8789',
  ];
}

/** The fiscal registers served on the same URL, and what a receipt adapter is pointed at. */
function describeRegisters(sim: Simulator): string[] {
  const url = sim.url || '(not started)';
  const ebarimt = sim.registers.ebarimt.state();
  const [cashbox] = sim.registers.webkassa.state();
  const wk = sim.registers.webkassa.service;
  return [
    '# fiscal registers on the same URL',
    `eBarimt PosAPI: ${url}/rest/receipt, /rest/info, /rest/sendData; merchant TIN ${ebarimt.merchants.map((m) => m.tin).join(', ')}` +
      ` (${ebarimt.activated ? 'activated' : 'not activated'}, ${ebarimt.lotteries} lottery numbers)`,
    `Webkassa: ${url}/api/v4/Check; login ${wk.login}, password ${wk.password}, x-api-key ${wk.apiKey ?? '(none)'}, cashbox ${cashbox?.uniqueNumber ?? '(none)'}`,
    `register faults: POST ${url}/__sim/ebarimt/faults (or /__sim/webkassa/faults) {"lostAfterCommit":1}; state: POST ${url}/__sim/<register>/state`,
  ];
}
