/** One option of a command: how it is written, and what it does (with its accepted values). */
export type OptionHelp = readonly [flag: string, about: string];

export interface CommandHelp {
  usage: string;
  about: string;
  /**
   * The options this command accepts, beyond --help. Each flag's first word (`--state`) is what the
   * parser allows for this command: any other option is refused with a suggestion.
   */
  options?: readonly OptionHelp[];
  /** Values an option accepts that live in another folder, loaded only when this help is shown. */
  values?: () => Promise<string>;
}

const CONFIG: OptionHelp = ['--config FILE', 'the settings file (default: $VENDGATE_CONFIG, /etc/vendgate/config.yaml, the demo)'];
const JSON_OUT: OptionHelp = ['--json', 'machine-readable output'];
/** `start` and `selftest` take the same ports (the selftest checks the instance started with them). */
const PORTS: readonly OptionHelp[] = [
  ['--local-port N', 'the kiosk page and local API (http.local.port; also $VENDGATE_LOCAL_PORT)'],
  ['--webhook-port N', 'the webhook listener (http.webhook.port; also $VENDGATE_WEBHOOK_PORT)'],
  ['--broker-port N', 'the embedded MQTT broker (mqtt.embeddedPort, with mqtt.url: embedded; also $VENDGATE_BROKER_PORT)'],
];

/** The command line's help: one entry per subcommand, so `vendgate help <command>` shows only its own. */
export const COMMANDS: Record<string, CommandHelp> = {
  start: {
    usage: 'start [--config FILE] [--lan] [--provider qpay|kaspi] [--local-port N] [--webhook-port N] [--broker-port N]',
    about: "run the gateway (npm start); --lan: demo pay page and QR\non this machine's LAN address (provider.sandboxLanPort, 8090)",
    options: [
      CONFIG,
      ['--lan', "the sandbox demo's pay page on this machine's LAN address, so a phone can pay (port provider.sandboxLanPort, 8090)"],
      [
        '--provider qpay|kaspi',
        "the demo with the QPay or Kaspi QR adapter against its simulator (Kaspi: through the relay's Kaspi caller), run in this process (test money)",
      ],
      ...PORTS,
    ],
  },
  relay: {
    usage: 'relay [--config FILE]',
    about:
      'fleet mode: one webhook endpoint for a whole fleet, carried\nby the broker (default $VENDGATE_RELAY_CONFIG, /etc/vendgate/relay.yaml)',
    options: [['--config FILE', 'the relay settings file (default: $VENDGATE_RELAY_CONFIG, /etc/vendgate/relay.yaml)']],
  },
  orders: {
    usage: 'orders [--state S] [--json] [--limit N]',
    about: 'list orders, newest first',
    options: [
      CONFIG,
      ['--state S', 'only orders in state S (the states are listed below)'],
      JSON_OUT,
      ['--limit N', 'at most N orders (default 50)'],
    ],
    values: async () => `states (--state): ${(await import('../orders/index.js')).ORDER_STATES.join(', ')}`,
  },
  resolve: {
    usage: 'resolve ORDER --vended|--not-vended',
    about: 'settle an uncertain vend (not vended → refund)',
    options: [
      CONFIG,
      ['--vended', 'the customer got the goods: the order becomes vended'],
      ['--not-vended', 'the customer got nothing: the refund is queued'],
    ],
  },
  settle: {
    usage: 'settle CASE OUTCOME [--json]',
    about:
      'settle a parked case named by its alarm: orphan_invoice/…\n(refund, goods-went-out, not-ours); invoice_recovered/…,\npayment_mismatch/…, refunded_after_vend/…, forged_event/… (checked)',
    options: [CONFIG, JSON_OUT],
  },
  receipt: {
    usage: 'receipt ORDER --issued --register-id ID --register-date DATE | --not-issued [--return]',
    about: 'settle a fiscal receipt whose outcome is unknown or that the\nregister refused, after looking in the register',
    options: [
      CONFIG,
      ['--issued', 'the register holds the receipt: record it (with --register-id and --register-date, as the register shows them)'],
      ['--register-id ID', "the register's receipt id (eBarimt: 33 digits)"],
      ['--register-date DATE', "the receipt's date as the register shows it (a later return names it)"],
      ['--not-issued', 'the register holds none: queue it again under the same key (the running service sends it)'],
      ['--return', "the order's return receipt instead of its sale receipt"],
    ],
  },
  migrate: { usage: 'migrate [--config FILE]', about: 'apply pending database migrations (update.sh)', options: [CONFIG] },
  replay: {
    usage: 'replay [--since ISO]',
    about: 're-run stored webhook events (GET + observe); default: last 24 h',
    options: [CONFIG, ['--since ISO', 'events received since this time (ISO 8601; default: 24 hours ago)']],
  },
  setup: {
    usage: 'setup [--config FILE] [--secrets FILE] [--no-apply]',
    about: 'the guided step after install: provider, credentials and tunnel\nasked, checked, written; then tunnel, restart, selftest',
    options: [
      ['--config FILE', 'the settings file to change (default: $VENDGATE_CONFIG, /etc/vendgate/config.yaml)'],
      ['--secrets FILE', 'the secrets file (default: secrets.env beside the settings file)'],
      ['--no-apply', 'write the files only, and print the tunnel, restart and selftest commands instead of running them'],
    ],
  },
  doctor: {
    usage: 'doctor [--json]',
    about: 'the database and the SD card: integrity, WAL, free space,\nread-only, ext4 errors and lifetime writes; what to do',
    options: [CONFIG, JSON_OUT],
  },
  db: {
    usage: 'db backup [--to FILE] | restore FILE --yes | replace --yes | status [--json]',
    about:
      'the database file: a checked, synced backup (the service may run);\nrestore a backup or replace it with an empty one (service stopped;\nthe old one kept, what was done recorded for the next start)',
    options: [
      CONFIG,
      ['--to FILE', 'backup: where the copy goes [backups/vendgate-<time>.db beside the database]'],
      ['--yes', 'restore, replace: do it (without it, says what it would do)'],
      JSON_OUT,
    ],
  },
  reconcile: {
    usage: 'reconcile [--since ISO] [--json]',
    about: 'paid invoices without a vend or refund here, vends without\na paid invoice there; exit 1 when any (default: last 24 h)',
    options: [CONFIG, ['--since ISO', 'invoices created since this time (ISO 8601; default: 24 hours ago)'], JSON_OUT],
  },
  selftest: {
    usage: 'selftest [--json] [--actuate [--yes]] [--expect-service] [--record] [--local-port N …]',
    about: 'check everything on site; exit 0 only when nothing FAILs\n(--actuate: one test vend after you type yes; --yes for scripts)',
    options: [
      CONFIG,
      JSON_OUT,
      ['--actuate', 'also one test vend, after you type yes'],
      ['--yes', 'confirms --actuate without asking (scripts)'],
      ['--expect-service', 'a stopped service is a FAIL, not a WARN (the install and update scripts)'],
      ['--record', 'store and publish the result even when the service is not running'],
      ...PORTS,
    ],
  },
  export: {
    usage: 'export [--from ISO] [--to ISO]',
    about: 'orders created in [from, to) as CSV, for accounting',
    options: [
      CONFIG,
      ['--from ISO', 'first instant included (default: the first order)'],
      ['--to ISO', 'first instant excluded (default: now)'],
    ],
  },
  dex: {
    usage: 'dex [--reset] [--out FILE] [--read N] [--after-restore]',
    about: 'the EVA-DTS audit (DEX) of this machine from the ledger, for\nthe VMS; --reset: a service read that starts a new interval',
    options: [
      CONFIG,
      ['--reset', 'a service read: the "since reset" counters start again, in the same commit as this read'],
      ['--out FILE', 'write the file there (default: standard output)'],
      ['--read N', 'the file of read N again, as it was sent (the last dex.keepReads are kept)'],
      ['--after-restore', 'take a read although the database holds less than the last read (a restore): starts the chain again, flagged'],
    ],
  },
  visit: {
    usage: 'visit --by NAME [--fill SLOT=COUNT,...] [--out FILE]',
    about: 'record a service visit: who came, what each filled slot now\nholds (sets its stock), and the reset read',
    options: [
      CONFIG,
      ['--by NAME', 'who came'],
      ['--fill SLOT=COUNT,...', 'the items each filled slot now holds, e.g. A1=12,B2=8'],
      ['--out FILE', "write the reset read's DEX file there (default: standard output)"],
    ],
  },
  picklist: {
    usage: 'picklist [--json]',
    about: 'per slot, how many items to bring at the next visit',
    options: [CONFIG, JSON_OUT],
  },
  stock: { usage: 'stock [--json]', about: 'every slot: price, counted stock, sold out, jammed', options: [CONFIG, JSON_OUT] },
  refill: { usage: 'refill SLOT COUNT', about: 'set the items now in a slot (after filling it)', options: [CONFIG] },
  'clear-jam': { usage: 'clear-jam SLOT', about: 'put a jammed slot back in sale (after fixing it)', options: [CONFIG] },
  catalog: {
    usage: 'catalog [--json] | --apply FILE | --rollback',
    about: 'the catalog in use; apply a document (JSON/YAML); back one version',
    options: [
      CONFIG,
      JSON_OUT,
      ['--apply FILE', 'apply a catalog document (JSON or YAML)'],
      ['--rollback', 'back to the previous version'],
    ],
  },
  command: {
    usage:
      'command keygen|sign|send|device-key [NAME] --key-id ID [--key FILE] [--out FILE] [--device ID] [--db-id ID] [--device-key KEY] [--body JSON] [--ttl SEC]',
    about:
      "signed operator commands (refund, resolve, catalog, test_vend, …):\nkeygen makes a key pair, sign prints an envelope, send signs,\npublishes over the configured broker and prints the device's\nanswer, checked against the device's own key (exit 1: refused);\ndevice-key prints this device's public answer key; docs/security.md",
    options: [
      CONFIG,
      ['--key-id ID', "the operator key's id, as the devices list it in commands.keys"],
      ['--key FILE', 'sign, send: the private key file keygen wrote'],
      ['--out FILE', 'keygen: where the private key is written (mode 0600, never over an existing file)'],
      ['--device ID', 'sign: the device the command is for; send: instead of device.id of the configuration'],
      ['--db-id ID', "the database the command is for; send: read from the device's retained state when absent"],
      ['--body JSON', 'the command\'s fields, e.g. {"order":"vm-1-a1b2c3-42-0badf00d"} (the order\'s reference) or {"slot":"A1"} [{}]'],
      ['--ttl SEC', 'how long the command stays valid [300]'],
      ['--request-id R', 'instead of a fresh UUID (a request id runs once, for ever)'],
      ['--timeout-ms N', "send: how long to wait for the device's answer [15000]"],
      [
        '--device-key KEY',
        "send: the device's public answer key (vendgate command device-key on it), instead of commands.deviceKeys.<device id>",
      ],
    ],
  },
  simulate: {
    usage: 'simulate --provider gerege|qutpay|qpay|kaspi [--port N] [--webhook-url URL] [--faults JSON]',
    about: 'run the payment provider simulator alone',
    options: [
      ['--provider NAME', 'gerege, qutpay, qpay or kaspi'],
      ['--port N', 'where it listens (default 9090)'],
      ['--host H', 'the address it listens on (default 127.0.0.1)'],
      ['--webhook-url URL', "where it delivers webhooks (the gateway's /webhooks/<provider>)"],
      ['--faults JSON', 'fault rates, e.g. {"rateLimit":0.2,"lostResponse":0.1}'],
      ['--seed N', 'the random seed of the faults'],
    ],
  },
  'simulate-machine': {
    usage:
      'simulate-machine --path TTY [--profile line|mdb] [--baud N] [--fail-slots A2,B1] [--fail-rate P]\n                 [--silent-slots A1] [--vend-delay-ms N] [--session-timeout-ms N] [--auto-vend ITEM:AMOUNT:MS]',
    about: 'play a serial vending machine / MDB board on a pty (development)',
    options: [
      ['--path TTY', 'the machine side of a pty pair (socat)'],
      ['--profile P', 'line (a text protocol) or mdb (an MDB board); default line'],
      ['--baud N', 'line speed (default 9600)'],
      ['--fail-slots LIST', 'slots that always fail, comma-separated'],
      ['--fail-rate P', 'share of vends that fail, 0 to 1'],
      ['--silent-slots LIST', 'slots that never answer'],
      ['--vend-delay-ms N', 'how long a vend takes'],
      ['--session-timeout-ms N', 'MDB: how long a session waits for the gateway'],
      ['--auto-vend ITEM:AMOUNT:MS', 'MDB: ask for ITEM at AMOUNT every MS milliseconds'],
    ],
  },
  help: { usage: 'help [COMMAND]', about: 'this list, or one command with its options', options: [] },
  version: { usage: 'version', about: 'the release, its commit and the Node.js running it (also --version)', options: [] },
};

const FOOTER = `  --config FILE  defaults to $VENDGATE_CONFIG, then /etc/vendgate/config.yaml, then the demo config
  --version      print the release, its commit and the Node.js running it
Exit codes: 0 ok, 1 runtime failure, 64 usage, 74 the storage (damaged database, full disk, card gone read-only),
75 another vendgate runs on this database, 78 bad configuration (or a port in use).`;

const COLUMN = 46;

function entry([, { usage, about }]: [string, CommandHelp]): string {
  const aboutLines = about.split('\n');
  const pad = (text: string) => ' '.repeat(COLUMN) + text;
  // A short usage line takes the description beside it; a long one puts it underneath.
  if (!usage.includes('\n') && usage.length + 2 < COLUMN - 1) {
    return [`  ${usage.padEnd(COLUMN - 2)}${aboutLines[0]}`, ...aboutLines.slice(1).map(pad)].join('\n');
  }
  return [...usage.split('\n').map((line) => `  ${line}`), ...aboutLines.map(pad)].join('\n');
}

/** `vendgate help`: every command. */
export function usage(): string {
  return `usage: vendgate <command> [options]\n\n${Object.entries(COMMANDS).map(entry).join('\n')}\n\n${FOOTER}\n\`vendgate help <command>\` shows one command with its options.`;
}

/** `vendgate help <command>` and `vendgate <command> --help`: that command with its options. */
export async function commandUsage(name: string): Promise<string> {
  const { usage: line, about, options = [], values } = COMMANDS[name] ?? { usage: name, about: 'not a command' };
  const width = Math.max(0, ...options.map(([flag]) => flag.length));
  const list = options.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`).join('\n');
  const optionsPart = options.length > 0 ? `\n\noptions:\n${list}${values ? `\n\n${await values()}` : ''}` : '';
  return `usage: vendgate ${line.replace(/\n\s+/g, ' ')}\n\n${about.replace(/\n/g, ' ')}${optionsPart}\n\nExit codes: 0 ok, 1 runtime failure, 64 usage, 74 the storage (damaged database, full disk, card gone read-only), 75 another vendgate runs on this database, 78 bad configuration (or a port in use).`;
}

/** The long options a command accepts (its listed flags, and --help). Null: the command lists none, so any known option is let through. */
export function optionNamesOf(name: string): string[] | null {
  const options = COMMANDS[name]?.options;
  if (!options) return null;
  return ['help', ...options.map(([flag]) => flag.replace(/ .*$/, '').replace(/^--/, ''))];
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  // One row of the edit table at a time: row[j] is the distance between a[0, i) and b[0, j).
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next.push(Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The closest of `candidates` to `word`, when it is close enough to be a slip of the keyboard. */
export function closest(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = candidate.startsWith(word) && word.length >= 3 ? 0.5 : distance(word, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== null && bestDistance <= Math.max(1, Math.floor(word.length / 3)) ? best : null;
}
