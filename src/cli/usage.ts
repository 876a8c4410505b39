/** The command line's help: one entry per subcommand, so `vendgate <command> --help` shows only its own. */
export const COMMANDS: Record<string, { usage: string; about: string }> = {
  start: {
    usage: 'start [--config FILE] [--lan]',
    about: "run the gateway (npm start); --lan: demo pay page and QR\non this machine's LAN address (provider.sandboxLanPort, 8090)",
  },
  relay: {
    usage: 'relay [--config FILE]',
    about:
      'fleet mode: one webhook endpoint for a whole fleet, carried\nby the broker (default $VENDGATE_RELAY_CONFIG, /etc/vendgate/relay.yaml)',
  },
  orders: { usage: 'orders [--state S] [--json] [--limit N]', about: 'list orders, newest first' },
  resolve: { usage: 'resolve ORDER --vended|--not-vended', about: 'settle an uncertain vend (not vended → refund)' },
  migrate: { usage: 'migrate [--config FILE]', about: 'apply pending database migrations (update.sh)' },
  doctor: {
    usage: 'doctor [--json]',
    about: 'the database and the SD card: integrity, WAL, free space,\nread-only, ext4 errors and lifetime writes; what to do',
  },
  replay: { usage: 'replay [--since ISO]', about: 're-run stored webhook events (GET + observe); default: last 24 h' },
  reconcile: {
    usage: 'reconcile [--since ISO] [--json]',
    about: 'paid invoices without a vend or refund here, vends without\na paid invoice there; exit 1 when any (default: last 24 h)',
  },
  selftest: {
    usage: 'selftest [--json] [--actuate [--yes]] [--expect-service]',
    about: 'check everything on site; exit 0 only when nothing FAILs\n(--actuate: one test vend after you type yes; --yes for scripts)',
  },
  export: { usage: 'export [--from ISO] [--to ISO]', about: 'orders created in [from, to) as CSV, for accounting' },
  stock: { usage: 'stock [--json]', about: 'every slot: price, counted stock, sold out, jammed' },
  refill: { usage: 'refill SLOT COUNT', about: 'set the items now in a slot (after filling it)' },
  'clear-jam': { usage: 'clear-jam SLOT', about: 'put a jammed slot back in sale (after fixing it)' },
  catalog: {
    usage: 'catalog [--json] | --apply FILE | --rollback',
    about: 'the catalog in use; apply a document (JSON/YAML); back one version',
  },
  simulate: {
    usage: 'simulate --provider gerege|qutpay [--port N] [--webhook-url URL] [--faults JSON]',
    about: 'run the payment provider simulator alone',
  },
  'simulate-machine': {
    usage:
      'simulate-machine --path TTY [--profile line|mdb] [--baud N] [--fail-slots A2,B1] [--fail-rate P]\n                 [--silent-slots A1] [--vend-delay-ms N] [--session-timeout-ms N] [--auto-vend ITEM:AMOUNT:MS]',
    about: 'play a serial vending machine / MDB board on a pty (development)',
  },
};

const FOOTER = `  --config FILE  defaults to $VENDGATE_CONFIG, then /etc/vendgate/config.yaml, then the demo config
  --version      print the release, its commit and the Node.js running it
Exit codes: 0 ok, 1 runtime failure, 64 usage, 74 the storage (damaged database, full disk, card gone read-only),
75 another vendgate runs on this database, 78 bad configuration (or a port in use).`;

const COLUMN = 46;

function entry(name: string): string {
  const { usage, about } = COMMANDS[name]!;
  const aboutLines = about.split('\n');
  const pad = (text: string) => ' '.repeat(COLUMN) + text;
  // A short usage line takes the description beside it; a long one puts it underneath.
  if (!usage.includes('\n') && usage.length + 2 < COLUMN - 1) {
    return [`  ${usage.padEnd(COLUMN - 2)}${aboutLines[0]}`, ...aboutLines.slice(1).map(pad)].join('\n');
  }
  return [...usage.split('\n').map((line) => `  ${line}`), ...aboutLines.map(pad)].join('\n');
}

/** `vendgate --help`: every command. */
export function usage(): string {
  return `usage: vendgate <command> [options]\n\n${Object.keys(COMMANDS).map(entry).join('\n')}\n\n${FOOTER}`;
}

/** `vendgate <command> --help`: that command only. */
export function commandUsage(name: string): string {
  const { usage: line, about } = COMMANDS[name]!;
  return `usage: vendgate ${line.replace(/\n\s+/g, ' ')}\n\n${about.replace(/\n/g, ' ')}\n\n${FOOTER}`;
}
