/** The soak's final table: each figure beside its target, and whether it holds. */
export function soakRows(r) {
  const rows = [
    ['orders', r.orders, '', null],
    ['paid (at the provider)', r.paid, '', null],
    ['vended', r.vended, '', null],
    ['refunded', r.refunded, '', null],
    ['uncertain', r.uncertain, `≤ kills while firing (${r.killsWhileFiring})`, r.uncertain <= r.killsWhileFiring],
    ['double vends', r.doubleVends, '0', r.doubleVends === 0],
    ['paid but unsettled', r.paidButUnsettled, '0', r.paidButUnsettled === 0],
    ['refunds left to a person (unknown outcome)', r.refundsLeftToPerson, '0', r.refundsLeftToPerson === 0],
    ['invoices per order', r.invoicesPerOrder.toFixed(3), '1 per attempt', r.extraInvoices === 0],
  ];
  if (r.mqttEnabled) {
    rows.push(['MQTT events missing', r.mqtt.missing, `0 (of ${r.mqtt.expected})`, r.mqtt.missing === 0]);
    rows.push(['MQTT ids naming two events', r.mqtt.conflicting + r.mqtt.unknown, '0', r.mqtt.conflicting + r.mqtt.unknown === 0]);
    rows.push(['MQTT redeliveries (QoS 1, same event)', r.mqtt.redeliveries, 'informational', null]);
  } else {
    rows.push(['MQTT events missing / duplicated', 'n/a', 'MQTT off in this run', null]);
  }
  if (r.catalog) {
    const c = r.catalog;
    rows.push(['catalogs pushed / broken / rollbacks', `${c.pushes.valid} / ${c.pushes.broken} / ${c.pushes.rollback}`, '', null]);
    rows.push(['catalog versions applied / rolled back', `${c.catalogVersionsApplied} / ${c.rolledBack}`, '', null]);
    rows.push(['orders priced from another catalog', c.wrongPrice, '0', c.wrongPrice === 0]);
    rows.push(['orders of a jammed or sold-out slot', c.soldWhileClosed, '0', c.soldWhileClosed === 0]);
    rows.push(['slot jams / cleared by the technician', `${c.jams} / ${c.jamsCleared}`, '', null]);
    rows.push([
      'stock left (A1, B1) / delivered',
      `${c.stock.A1}, ${c.stock.B1} / ${JSON.stringify(c.vendedBySlot)}`,
      'initial − delivered',
      null,
    ]);
  }
  rows.push(['kills (SIGKILL) / while firing', `${r.kills} / ${r.killsWhileFiring}`, '', null]);
  rows.push(['broker stops / webhook outages', `${r.brokerStops} / ${r.webhookOutages}`, '', null]);
  rows.push(['violations', r.violations.length, '0', r.violations.length === 0]);
  return rows;
}

export function formatTable(rows, headers = ['figure', 'value', 'target', 'ok']) {
  const cells = rows.map((row) => [String(row[0]), String(row[1]), String(row[2]), row[3] === null ? '' : row[3] ? 'yes' : 'NO']);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => `| ${c.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}
