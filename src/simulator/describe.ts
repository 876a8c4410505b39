import type { Simulator } from './types.js';

/**
 * What `vendgate simulate` prints: where the simulator listens, its credentials, and the lines to
 * paste into a config file and the secrets environment to point a gateway at it.
 */
export function describeSimulator(sim: Simulator): string {
  const info = sim.info();
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
