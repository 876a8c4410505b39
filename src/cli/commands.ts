import type { CliIo } from './io.js';

/**
 * The command line, in one table: each command's usage line, what it does, its options (how each is
 * written, which says its type, and what it does) and its handler. The help (usage.ts), the parser
 * and its "did you mean" (index.ts) read this table and nothing else. Handlers load their module with
 * `await import()` when they run, so this file imports no command (`vendgate --version` evaluates
 * none of them): keep it so. One entry per command.
 */

/**
 * One option of a command: how it is written, and what it does (with its accepted values). A flag
 * with a placeholder after its name (`--state S`) takes a value, a string; one without (`--json`) is a
 * switch, a boolean. The flag's first word is what the parser allows for this command: any other
 * option is refused with a suggestion.
 */
export type OptionHelp = readonly [flag: string, about: string];

/** `--state S` → `state`, `--json` → `json`. */
type NameOf<F extends string> = F extends `--${infer N} ${string}` ? N : F extends `--${infer N}` ? N : never;
/** `--state S` takes a string, `--json` is a boolean. */
type ValueOf<F extends string> = F extends `--${string} ${string}` ? string : boolean;

/** What a handler gets: its options by name (typed by their flags), and the words after the command. */
export interface CommandArgs<O extends readonly OptionHelp[] = readonly OptionHelp[]> {
  values: { [K in O[number] as NameOf<K[0]>]?: ValueOf<K[0]> };
  rest: string[];
}

/** What `vendgate start` takes from its caller beyond the command line (crash tests). */
export interface CliExtra {
  crashPoint?: (name: string) => void;
}

export interface CommandSpec {
  usage: string;
  about: string;
  /** The options this command accepts, beyond --help and --version. */
  options: readonly OptionHelp[];
  /** Values an option accepts that live in another folder, loaded only when this help is shown. */
  values?: () => Promise<string>;
  /** Runs the command (its module loaded now) and returns the exit code. Absent: handled by the parser (help, version). */
  run?: (args: CommandArgs, io: CliIo, extra: CliExtra) => Promise<number> | number;
}

/** An entry of the table, its handler typed by its own options. */
function command<const O extends readonly OptionHelp[]>(spec: {
  usage: string;
  about: string;
  options: O;
  values?: () => Promise<string>;
  run?: (args: CommandArgs<O>, io: CliIo, extra: CliExtra) => Promise<number> | number;
}): CommandSpec {
  return spec as CommandSpec;
}

const CONFIG = ['--config FILE', 'the settings file (default: $VENDGATE_CONFIG, /etc/vendgate/config.yaml, the demo)'] as const;
const JSON_OUT = ['--json', 'machine-readable output'] as const;
/** `start` and `selftest` take the same ports (the selftest checks the instance started with them). */
const PORTS = [
  ['--local-port N', 'the kiosk page and local API (http.local.port; also $VENDGATE_LOCAL_PORT)'],
  ['--webhook-port N', 'the webhook listener (http.webhook.port; also $VENDGATE_WEBHOOK_PORT)'],
  ['--broker-port N', 'the embedded MQTT broker (mqtt.embeddedPort, with mqtt.url: embedded; also $VENDGATE_BROKER_PORT)'],
] as const;
const portsOf = (values: { 'local-port'?: string; 'webhook-port'?: string; 'broker-port'?: string }) => ({
  local: values['local-port'],
  webhook: values['webhook-port'],
  broker: values['broker-port'],
});

/** Short forms, for every command. */
export const SHORT_OPTIONS: Readonly<Record<string, string>> = { config: 'c', help: 'h', version: 'V' };

/** The command line: one entry per subcommand, so `vendgate help <command>` shows only its own. */
export const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  start: command({
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
    run: async ({ values }, io, extra) =>
      (await import('./start.js')).startCommand(
        { config: values.config, lan: values.lan, provider: values.provider, ports: portsOf(values) },
        io,
        extra,
      ),
  }),
  relay: command({
    usage: 'relay [--config FILE]',
    about:
      'fleet mode: one webhook endpoint for a whole fleet, carried\nby the broker (default $VENDGATE_RELAY_CONFIG, /etc/vendgate/relay.yaml)',
    options: [['--config FILE', 'the relay settings file (default: $VENDGATE_RELAY_CONFIG, /etc/vendgate/relay.yaml)']],
    run: async ({ values }, io) => (await import('./relay.js')).relayCommand({ config: values.config }, io),
  }),
  orders: command({
    usage: 'orders [--state S] [--json] [--limit N]',
    about: 'list orders, newest first',
    options: [
      CONFIG,
      ['--state S', 'only orders in state S (the states are listed below)'],
      JSON_OUT,
      ['--limit N', 'at most N orders (default 50)'],
    ],
    // The states' own file (no imports), not the folder's index: `orders --help` need not load the
    // settings, zod and yaml that the orders folder's other modules bring (10 MB and 100 ms more).
    values: async () => `states (--state): ${(await import('../orders/state.js')).ORDER_STATES.join(', ')}`,
    run: async ({ values }, io) =>
      (await import('./orders.js')).ordersCommand(
        { config: values.config, state: values.state, json: values.json, limit: values.limit },
        io,
      ),
  }),
  resolve: command({
    usage: 'resolve ORDER --vended|--not-vended',
    about: 'settle an uncertain vend (not vended → refund)',
    options: [
      CONFIG,
      ['--vended', 'the customer got the goods: the order becomes vended'],
      ['--not-vended', 'the customer got nothing: the refund is queued'],
    ],
    run: async ({ values, rest }, io) =>
      (await import('./orders.js')).resolveCommand(
        { config: values.config, order: rest[0], vended: values.vended, notVended: values['not-vended'] },
        io,
      ),
  }),
  settle: command({
    usage: 'settle CASE OUTCOME [--json]',
    about:
      'settle a parked case named by its alarm: orphan_invoice/…\n(refund, goods-went-out, not-ours); invoice_recovered/…,\npayment_mismatch/…, refunded_after_vend/…, forged_event/… (checked)',
    options: [CONFIG, JSON_OUT],
    run: async ({ values, rest }, io) =>
      (await import('./settle.js')).settleCommand({ config: values.config, case: rest[0], outcome: rest[1], json: values.json }, io),
  }),
  receipt: command({
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
    run: async ({ values, rest }, io) =>
      (await import('./orders.js')).receiptCommand(
        {
          config: values.config,
          order: rest[0],
          issued: values.issued,
          notIssued: values['not-issued'],
          registerId: values['register-id'],
          registerDate: values['register-date'],
          return: values.return,
        },
        io,
      ),
  }),
  migrate: command({
    usage: 'migrate [--config FILE]',
    about: 'apply pending database migrations (update.sh)',
    options: [CONFIG],
    run: async ({ values }, io) => (await import('./migrate.js')).migrateCommand({ config: values.config }, io),
  }),
  replay: command({
    usage: 'replay [--since ISO]',
    about: 're-run stored webhook events (GET + observe); default: last 24 h',
    options: [CONFIG, ['--since ISO', 'events received since this time (ISO 8601; default: 24 hours ago)']],
    run: async ({ values }, io) => (await import('./replay.js')).replayCommand({ config: values.config, since: values.since }, io),
  }),
  setup: command({
    usage: 'setup [--config FILE] [--secrets FILE] [--no-apply]',
    about: 'the guided step after install: provider, credentials and tunnel\nasked, checked, written; then tunnel, restart, selftest',
    options: [
      ['--config FILE', 'the settings file to change (default: $VENDGATE_CONFIG, /etc/vendgate/config.yaml)'],
      ['--secrets FILE', 'the secrets file (default: secrets.env beside the settings file)'],
      ['--no-apply', 'write the files only, and print the tunnel, restart and selftest commands instead of running them'],
    ],
    run: async ({ values }, io) =>
      (await import('./setup.js')).setupCommand({ config: values.config, secrets: values.secrets, noApply: values['no-apply'] }, io),
  }),
  doctor: command({
    usage: 'doctor [--json]',
    about: 'the database and the SD card: integrity, WAL, free space,\nread-only, ext4 errors and lifetime writes; what to do',
    options: [CONFIG, JSON_OUT],
    run: async ({ values }, io) => (await import('./doctor.js')).doctorCommand({ config: values.config, json: values.json }, io),
  }),
  db: command({
    usage: 'db backup [--to FILE] | restore FILE --yes | replace --yes | status [--json]',
    about:
      'the database file: a checked, synced backup (the service may run);\nrestore a backup or replace it with an empty one (service stopped;\nthe old one kept, what was done recorded for the next start)',
    options: [
      CONFIG,
      ['--to FILE', 'backup: where the copy goes [backups/vendgate-<time>.db beside the database]'],
      ['--yes', 'restore, replace: do it (without it, says what it would do)'],
      JSON_OUT,
    ],
    run: async ({ values, rest }, io) =>
      (await import('./db.js')).dbCommand(
        { action: rest[0], file: rest[1], config: values.config, to: values.to, yes: values.yes, json: values.json },
        io,
      ),
  }),
  reconcile: command({
    usage: 'reconcile [--since ISO] [--json]',
    about: 'paid invoices without a vend or refund here, vends without\na paid invoice there; exit 1 when any (default: last 24 h)',
    options: [CONFIG, ['--since ISO', 'invoices created since this time (ISO 8601; default: 24 hours ago)'], JSON_OUT],
    run: async ({ values }, io) =>
      (await import('./reconcile.js')).reconcileCommand({ config: values.config, since: values.since, json: values.json }, io),
  }),
  selftest: command({
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
    run: async ({ values }, io) =>
      (await import('./selftest.js')).selftestCommand(
        {
          config: values.config,
          json: values.json,
          actuate: values.actuate,
          yes: values.yes,
          expectService: values['expect-service'],
          record: values.record,
          ports: portsOf(values),
        },
        io,
      ),
  }),
  export: command({
    usage: 'export [--from ISO] [--to ISO]',
    about: 'orders created in [from, to) as CSV, for accounting',
    options: [
      CONFIG,
      ['--from ISO', 'first instant included (default: the first order)'],
      ['--to ISO', 'first instant excluded (default: now)'],
    ],
    run: async ({ values }, io) =>
      (await import('./export.js')).exportCommand({ config: values.config, from: values.from, to: values.to }, io),
  }),
  dex: command({
    usage: 'dex [--reset] [--out FILE] [--read N] [--after-restore]',
    about: 'the EVA-DTS audit (DEX) of this machine from the ledger, for\nthe VMS; --reset: a service read that starts a new interval',
    options: [
      CONFIG,
      ['--reset', 'a service read: the "since reset" counters start again, in the same commit as this read'],
      ['--out FILE', 'write the file there (default: standard output)'],
      ['--read N', 'the file of read N again, as it was sent (the last dex.keepReads are kept)'],
      ['--after-restore', 'take a read although the database holds less than the last read (a restore): starts the chain again, flagged'],
    ],
    run: async ({ values }, io) =>
      (await import('./dex.js')).dexCommand(
        { config: values.config, reset: values.reset, out: values.out, read: values.read, afterRestore: values['after-restore'] },
        io,
      ),
  }),
  visit: command({
    usage: 'visit --by NAME [--fill SLOT=COUNT,...] [--out FILE]',
    about: 'record a service visit: who came, what each filled slot now\nholds (sets its stock), and the reset read',
    options: [
      CONFIG,
      ['--by NAME', 'who came'],
      ['--fill SLOT=COUNT,...', 'the items each filled slot now holds, e.g. A1=12,B2=8'],
      ['--out FILE', "write the reset read's DEX file there (default: standard output)"],
    ],
    run: async ({ values }, io) =>
      (await import('./dex.js')).visitCommand({ config: values.config, by: values.by, fill: values.fill, out: values.out }, io),
  }),
  picklist: command({
    usage: 'picklist [--json]',
    about: 'per slot, how many items to bring at the next visit',
    options: [CONFIG, JSON_OUT],
    run: async ({ values }, io) => (await import('./dex.js')).picklistCommand({ config: values.config, json: values.json }, io),
  }),
  stock: command({
    usage: 'stock [--json]',
    about: 'every slot: price, counted stock, sold out, jammed',
    options: [CONFIG, JSON_OUT],
    run: async ({ values }, io) => (await import('./catalog.js')).stockCommand({ config: values.config, json: values.json }, io),
  }),
  refill: command({
    usage: 'refill SLOT COUNT',
    about: 'set the items now in a slot (after filling it)',
    options: [CONFIG],
    run: async ({ values, rest }, io) =>
      (await import('./catalog.js')).refillCommand({ config: values.config, slot: rest[0], count: rest[1] }, io),
  }),
  'clear-jam': command({
    usage: 'clear-jam SLOT',
    about: 'put a jammed slot back in sale (after fixing it)',
    options: [CONFIG],
    run: async ({ values, rest }, io) => (await import('./catalog.js')).clearJamCommand({ config: values.config, slot: rest[0] }, io),
  }),
  catalog: command({
    usage: 'catalog [--json] | --apply FILE | --rollback',
    about: 'the catalog in use; apply a document (JSON/YAML); back one version',
    options: [
      CONFIG,
      JSON_OUT,
      ['--apply FILE', 'apply a catalog document (JSON or YAML)'],
      ['--rollback', 'back to the previous version'],
    ],
    run: async ({ values }, io) =>
      (await import('./catalog.js')).catalogCommand(
        { config: values.config, json: values.json, apply: values.apply, rollback: values.rollback },
        io,
      ),
  }),
  command: command({
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
    run: async ({ values, rest }, io) =>
      (await import('./command.js')).commandCommand(
        {
          action: rest[0],
          name: rest[1],
          config: values.config,
          key: values.key,
          keyId: values['key-id'],
          dbId: values['db-id'],
          device: values.device,
          deviceKey: values['device-key'],
          body: values.body,
          ttl: values.ttl,
          requestId: values['request-id'],
          out: values.out,
          timeoutMs: values['timeout-ms'],
        },
        io,
      ),
  }),
  simulate: command({
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
    run: async ({ values }, io) =>
      (await import('./simulate.js')).simulateCommand(
        {
          provider: values.provider,
          port: values.port,
          host: values.host,
          webhookUrl: values['webhook-url'],
          faults: values.faults,
          seed: values.seed,
        },
        io,
      ),
  }),
  'simulate-machine': command({
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
    run: async ({ values }, io) =>
      (await import('./simulate-machine.js')).simulateMachineCommand(
        {
          path: values.path,
          profile: values.profile,
          baud: values.baud,
          failSlots: values['fail-slots'],
          failRate: values['fail-rate'],
          silentSlots: values['silent-slots'],
          vendDelayMs: values['vend-delay-ms'],
          sessionTimeoutMs: values['session-timeout-ms'],
          autoVend: values['auto-vend'],
        },
        io,
        io.stdin ?? process.stdin,
      ),
  }),
  help: command({ usage: 'help [COMMAND]', about: 'this list, or one command with its options', options: [] }),
  version: command({ usage: 'version', about: 'the release, its commit and the Node.js running it (also --version)', options: [] }),
};

/** An option's name (`--state S` → `state`) and whether it takes a value. */
export function optionOf([flag]: OptionHelp): { name: string; takesValue: boolean } {
  const [written = '', ...placeholder] = flag.split(' ');
  return { name: written.replace(/^--/, ''), takesValue: placeholder.length > 0 };
}
