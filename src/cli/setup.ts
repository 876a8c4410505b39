import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { isMap, parseDocument } from 'yaml';
import { DEMO_CONFIG_PATH, loadSettings, resolveConfigPath, SECRET_ENV, SettingsError } from '../settings/index.js';
import { parseSecretsText } from '../settings/credentials.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';
import { askBroker, composeBroker, setAnswer, writeOperatorProfile, type BrokerAnswers } from './setup-broker.js';

export interface SetupOptions {
  config?: string;
  secrets?: string;
  /** --no-apply: write the files, then print the commands instead of running them. */
  noApply?: boolean;
}

type ProviderName = 'sandbox' | 'gerege' | 'qutpay' | 'qpay' | 'kaspi';
const PROVIDERS: readonly ProviderName[] = ['gerege', 'qutpay', 'qpay', 'kaspi', 'sandbox'];
const HOSTNAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

/** The answers of one run; a secret left empty keeps the one in the file. */
interface Answers {
  provider: ProviderName;
  deviceId: string;
  livemode: boolean;
  baseUrl?: string;
  clientId?: string;
  /** QPay: the merchant's invoice_code and the callback URL QPay calls. */
  invoiceCode?: string;
  callbackUrl?: string;
  secrets: Partial<Record<keyof typeof SECRET_ENV, string>>;
  tunnel: string | null;
  broker: BrokerAnswers;
}

/**
 * `vendgate setup`: the guided step after the package is installed. Asks for the provider, its
 * credentials and the tunnel's hostname; writes config.yaml (its comments and every other section
 * kept, the old file beside it as config.yaml.before-setup) and secrets.env (0640, its owner kept);
 * then sets up the tunnel, restarts the service and runs the selftest. Every answer is checked
 * together by the settings' own schema before anything is written: a wrong answer changes nothing.
 */
export async function setupCommand(options: SetupOptions, io: CliIo): Promise<number> {
  const configPath = options.config ? resolve(options.config) : resolveConfigPath(undefined, io.env);
  if (configPath === DEMO_CONFIG_PATH) {
    throw new UsageError(
      'no device configuration here (/etc/vendgate/config.yaml): install the package first (docs/install.md), or name the file with --config',
    );
  }
  if (!existsSync(configPath))
    throw new UsageError(`${configPath} does not exist: install the package first, or name the file with --config`);
  const secretsPath = options.secrets ? resolve(options.secrets) : join(dirname(configPath), 'secrets.env');
  const configText = readFileSync(configPath, 'utf8');
  const doc = parseDocument(configText);
  if (doc.errors.length > 0 || !isMap(doc.contents)) {
    throw new UsageError(`${configPath} is not a readable YAML mapping (${doc.errors[0]?.message ?? 'not a mapping'}): fix it first`);
  }
  const secretsText = existsSync(secretsPath) ? readFileSync(secretsPath, 'utf8') : '';
  const oldSecrets = parseSecretsText(secretsText);

  print(io.stdout, `vendgate setup: ${configPath} and ${secretsPath}. Enter keeps the value in [brackets].`);
  const prompt = createPrompt(io);
  let answers: Answers;
  try {
    answers = await ask(prompt, doc, oldSecrets);
  } finally {
    prompt.close();
  }

  const { nextConfig, nextSecrets } = compose(doc, secretsText, answers);
  // The schema judges the whole result before a byte is written: the candidate sits beside the
  // file (same directory, so its relative paths and the rename stay on one file system).
  const candidate = `${configPath}.setup-${process.pid}`;
  writeFileSync(candidate, nextConfig, { mode: 0o600 });
  let problems: string[] | null = null;
  try {
    loadSettings({ path: candidate, env: Object.fromEntries(parseSecretsText(nextSecrets)) });
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    problems = err.problems;
  }
  if (problems) {
    unlinkSync(candidate);
    print(
      io.stderr,
      `vendgate setup: these answers make a configuration the service would refuse; nothing was changed:\n  ${problems.join('\n  ')}`,
    );
    return EXIT.CONFIG;
  }

  copyFileSync(configPath, `${configPath}.before-setup`);
  replaceKeepingOwner(candidate, configPath, 0o640);
  writeSecrets(secretsPath, nextSecrets);
  print(io.stdout, summary(answers, configPath, secretsPath));
  const ops = writeOperatorProfile(configPath, doc, answers.deviceId, answers.broker);
  if (ops) print(io.stdout, `  the operator's command profile: ${ops} (vendgate command send --config ${ops} …; docs/security.md)`);

  const steps = nextSteps(answers);
  if (options.noApply || !canApply()) {
    print(io.stdout, `next, as root:\n${steps.map((s) => `  ${s.join(' ')}`).join('\n')}`);
    return EXIT.OK;
  }
  for (const step of steps) {
    const [program = '', ...args] = step;
    print(io.stdout, `> ${step.join(' ')}`);
    const run = spawnSync(program, args, { stdio: ['inherit', 'inherit', 'inherit'] });
    if (run.status !== 0) {
      print(
        io.stderr,
        `vendgate setup: "${step.join(' ')}" failed (exit ${run.status ?? run.signal}); the settings are written: fix what it said and run it again`,
      );
      return EXIT.FAILURE;
    }
  }
  return EXIT.OK;
}

interface Prompt {
  line(question: string, secret?: boolean): Promise<string>;
  say(text: string): void;
  /** Answers come from a person at a terminal (a wrong one is asked again), not a pipe. */
  interactive: boolean;
  close(): void;
}

/** Questions on stdout, answers from stdin line by line; a secret's typing is not echoed on a terminal. */
function createPrompt(io: CliIo): Prompt {
  let muted = false;
  const echo = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) io.stdout.write(chunk);
      done();
    },
  });
  const input = io.stdin ?? process.stdin;
  const interactive = Boolean((input as { isTTY?: boolean }).isTTY);
  const rl = createInterface({ input, output: echo, terminal: interactive });
  const lines = rl[Symbol.asyncIterator]();
  return {
    async line(question, secret = false) {
      io.stdout.write(question);
      muted = secret && interactive;
      const next = await lines.next();
      muted = false;
      if (secret && interactive) io.stdout.write('\n');
      if (next.done) throw new UsageError('the input ended before every question was answered; nothing was changed');
      return String(next.value).trim();
    },
    say: (text) => print(io.stdout, text),
    interactive,
    close: () => rl.close(),
  };
}

/** One question until its answer passes `check` (three tries on a terminal, one from a pipe). */
async function askChecked(
  prompt: Prompt,
  question: string,
  fallback: string | undefined,
  check: (value: string) => string | null,
  secret = false,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const shown = fallback === undefined || fallback === '' ? '' : secret ? ' [keep the one set]' : ` [${fallback}]`;
    const raw = await prompt.line(`${question}${shown}: `, secret);
    const value = raw === '' ? (fallback ?? '') : raw;
    const problem = check(value) ?? (secret ? secretsFileProblem(value) : null);
    if (problem === null) return value;
    if (attempt >= 3 || !prompt.interactive) throw new UsageError(`${question}: ${problem}; nothing was changed`);
    prompt.say(`  ${problem}`);
  }
}

/**
 * A secret goes into secrets.env as `NAME=value`, which the service reads as data (line trimmed,
 * one pair of enclosing quotes dropped): a value that would read back differently is refused, so
 * what the service uses is exactly what was typed. Nothing in the file is ever run as shell.
 */
export function secretsFileProblem(value: string): string | null {
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'a line break or control character cannot go into secrets.env';
  if (value !== value.trim()) return 'leading or trailing spaces would be dropped when the service reads secrets.env';
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0])
    return 'a value enclosed in quotes would lose them when the service reads secrets.env';
  return null;
}

const required = (what: string) => (value: string) => (value === '' ? `${what} is needed` : null);

async function ask(prompt: Prompt, doc: ReturnType<typeof parseDocument>, secrets: Map<string, string>): Promise<Answers> {
  const current = (path: string[]) => {
    const value = doc.getIn(path);
    return value === undefined || value === null ? undefined : String(value);
  };
  const provider = (await askChecked(
    prompt,
    `Payment provider (${PROVIDERS.join(', ')})`,
    current(['provider', 'name']) ?? 'sandbox',
    (v) => (PROVIDERS.includes(v as ProviderName) ? null : `"${v}" is not one of ${PROVIDERS.join(', ')}`),
  )) as ProviderName;
  const deviceId = await askChecked(
    prompt,
    'Device id (lower-case letters, digits, -; unique in the fleet)',
    current(['device', 'id']),
    (v) =>
      /^[a-z0-9][a-z0-9-]{0,62}$/.test(v)
        ? null
        : `"${v}" is not a device id: lower-case letters, digits and -, starting with a letter or digit`,
  );
  const answers: Answers = { provider, deviceId, livemode: false, secrets: {}, tunnel: null, broker: { url: '' } };
  if (provider !== 'sandbox') {
    const live = await askChecked(
      prompt,
      "Live money? (yes: live credentials; no: the provider's test mode)",
      current(['device', 'livemode']) === 'true' ? 'yes' : 'no',
      (v) => (/^(yes|no)$/i.test(v) ? null : 'answer yes or no'),
    );
    answers.livemode = live.toLowerCase() === 'yes';
    answers.baseUrl = await askChecked(
      prompt,
      provider === 'kaspi'
        ? "The fleet relay's Kaspi URL (vendgate relay, relay.kaspi; Kaspi itself takes calls only from the operator's whitelisted server)"
        : 'Provider API URL (given with your credentials)',
      current(['provider', 'baseUrl']),
      (v) => (/^https?:\/\/[^\s/]+/.test(v) ? null : 'an http(s) URL such as https://api.example.com'),
    );
    const keep = (name: string) => (secrets.has(name) ? '(set)' : undefined);
    if (provider === 'kaspi') {
      // The device token stays at the relay; the device holds only its own secret there.
      const secret = await askChecked(
        prompt,
        "This device's secret at the relay (its entry in the operator's kaspi-devices.json)",
        keep(SECRET_ENV.clientSecret),
        (v) => (v === '(set)' || v.length >= 16 ? null : 'the secret is at least 16 characters'),
        true,
      );
      if (secret !== '(set)') answers.secrets.clientSecret = secret;
    } else if (provider === 'gerege' || provider === 'qpay') {
      const label = provider === 'gerege' ? 'Gerege' : 'QPay';
      answers.clientId = await askChecked(prompt, `${label} client id`, current(['provider', 'clientId']), required('the client id'));
      const secret = await askChecked(prompt, `${label} client secret`, keep(SECRET_ENV.clientSecret), required('the client secret'), true);
      if (secret !== '(set)') answers.secrets.clientSecret = secret;
      if (provider === 'qpay')
        answers.invoiceCode = await askChecked(
          prompt,
          'QPay invoice code',
          current(['provider', 'invoiceCode']),
          required('the invoice code'),
        );
    } else {
      const key = await askChecked(
        prompt,
        'QutPay API key (qp_test_… or qp_live_…)',
        keep(SECRET_ENV.apiKey),
        (v) => (v === '(set)' || /^qp_(test|live)_\S+$/.test(v) ? null : 'a QutPay key starts qp_test_ or qp_live_'),
        true,
      );
      if (key !== '(set)') answers.secrets.apiKey = key;
      if (key !== '(set)' && answers.livemode !== key.startsWith('qp_live_')) {
        throw new UsageError(
          `a ${key.startsWith('qp_live_') ? 'live' : 'test'} key with live money ${answers.livemode ? 'on' : 'off'}: they must match; nothing was changed`,
        );
      }
    }
    // QPay's callbacks are unsigned hints, Kaspi QR sends none: there is no secret to ask for.
    if (provider !== 'qpay' && provider !== 'kaspi') {
      const webhook = await askChecked(
        prompt,
        'Webhook signing secret (comma-separated while rotating)',
        keep(SECRET_ENV.webhookSecrets),
        required('the webhook secret'),
        true,
      );
      if (webhook !== '(set)') answers.secrets.webhookSecrets = webhook;
    }
  }
  const publicUrl = current(['http', 'webhook', 'publicUrl']);
  const tunnel = await askChecked(
    prompt,
    'Tunnel hostname for webhooks (none: payments are found by polling alone)',
    publicUrl ? new URL(publicUrl).hostname : 'none',
    (v) => (v === 'none' || HOSTNAME.test(v) ? null : `"${v}" is not a host name such as pay-vm-001.example.com`),
  );
  answers.tunnel = tunnel === 'none' ? null : tunnel.toLowerCase();
  if (provider === 'qpay') {
    answers.callbackUrl = await askChecked(
      prompt,
      "QPay callback URL (this device's tunnel, or the fleet relay, ending /webhooks/qpay)",
      current(['provider', 'callbackUrl']) ?? (answers.tunnel ? `https://${answers.tunnel}/webhooks/qpay` : undefined),
      (v) => (/^https?:\/\/[^\s/]+\/\S*webhooks\/qpay$/.test(v) ? null : 'an http(s) URL ending /webhooks/qpay'),
    );
  }
  answers.broker = await askBroker(
    (question, fallback, check, secret) => askChecked(prompt, question, fallback, check, secret),
    current,
    secrets.has(SECRET_ENV.mqttPassword),
  );
  if (answers.broker.password !== undefined) answers.secrets.mqttPassword = answers.broker.password;
  const pin = await askChecked(
    prompt,
    'Service menu PIN on the kiosk screen (6 to 12 digits; empty: the menu stays off)',
    secrets.has(SECRET_ENV.servicePin) ? '(set)' : undefined,
    (v) => (v === '' || v === '(set)' || /^[0-9]{6,12}$/.test(v) ? null : 'the PIN is 6 to 12 digits'),
    true,
  );
  if (pin !== '' && pin !== '(set)') answers.secrets.servicePin = pin;
  return answers;
}

/** The new files' text: the YAML document with the answers set in it, the secrets file with its lines replaced. */
function compose(
  doc: ReturnType<typeof parseDocument>,
  secretsText: string,
  answers: Answers,
): { nextConfig: string; nextSecrets: string } {
  setAnswer(doc, ['device', 'id'], answers.deviceId);
  setAnswer(doc, ['device', 'livemode'], answers.livemode);
  setAnswer(doc, ['provider', 'name'], answers.provider);
  // Kaspi QR charges in tenge (the prices stay as written: KZT, like MNT, has no minor unit in practice).
  if (answers.provider === 'kaspi') setAnswer(doc, ['device', 'currency'], 'KZT');
  if (answers.baseUrl) setAnswer(doc, ['provider', 'baseUrl'], answers.baseUrl);
  if (answers.clientId) setAnswer(doc, ['provider', 'clientId'], answers.clientId);
  if (answers.invoiceCode) setAnswer(doc, ['provider', 'invoiceCode'], answers.invoiceCode);
  if (answers.callbackUrl) setAnswer(doc, ['provider', 'callbackUrl'], answers.callbackUrl);
  if (answers.tunnel) setAnswer(doc, ['http', 'webhook', 'publicUrl'], `https://${answers.tunnel}`);
  else if (doc.hasIn(['http', 'webhook', 'publicUrl'])) doc.deleteIn(['http', 'webhook', 'publicUrl']);
  composeBroker(doc, answers.broker);

  let lines = secretsText === '' ? [] : secretsText.replace(/\n$/, '').split('\n');
  for (const [key, value] of Object.entries(answers.secrets) as [keyof typeof SECRET_ENV, string][]) {
    const name = SECRET_ENV[key];
    lines = lines.filter((line) => !new RegExp(`^\\s*(export\\s+)?${name}=`).test(line));
    lines.push(`${name}=${value}`);
  }
  return { nextConfig: doc.toString(), nextSecrets: lines.length ? `${lines.join('\n')}\n` : '' };
}

/** Moves `from` over `to` with `to`'s owner and mode (or `mode` for a new file). */
function replaceKeepingOwner(from: string, to: string, mode: number): void {
  const old = existsSync(to) ? statSync(to) : null;
  if (old) {
    try {
      chownSync(from, old.uid, old.gid);
    } catch {
      // not root: the file stays the caller's, as a file the caller wrote
    }
  }
  chmodSync(from, old ? old.mode & 0o777 : mode);
  renameSync(from, to);
}

function writeSecrets(path: string, text: string): void {
  const candidate = `${path}.setup-${process.pid}`;
  writeFileSync(candidate, text, { mode: 0o600 });
  replaceKeepingOwner(candidate, path, 0o640);
}

function summary(answers: Answers, configPath: string, secretsPath: string): string {
  const secrets = Object.keys(answers.secrets).map((key) => SECRET_ENV[key as keyof typeof SECRET_ENV]);
  return [
    `written: ${configPath} (the old one: ${configPath}.before-setup) and ${secretsPath}`,
    `  device ${answers.deviceId}, provider ${answers.provider}${answers.provider === 'sandbox' ? '' : `, ${answers.livemode ? 'LIVE money' : 'test money'}`}`,
    `  secrets changed: ${secrets.length ? secrets.join(', ') : 'none'} (values are never shown)`,
    `  webhooks: ${answers.tunnel ? `https://${answers.tunnel}/webhooks/${answers.provider}` : 'no tunnel: payments are found by polling alone'}`,
    `  MQTT: ${answers.broker.url === '' ? 'none (no fleet monitoring, no signed commands)' : answers.broker.url}`,
  ].join('\n');
}

/** What makes the answers real on this Pi: the tunnel, a restart, the selftest. */
function nextSteps(answers: Answers): string[][] {
  // dist/vendgate-*.js (the bundle's chunk) or dist/cli/setup.js (tsc's build): scripts/ is beside dist/.
  const here = dirname(fileURLToPath(import.meta.url));
  const script = [join(here, '..', 'scripts', 'install-pi.sh'), join(here, '..', '..', 'scripts', 'install-pi.sh')].find((p) =>
    existsSync(p),
  );
  const steps: string[][] = [];
  // Only the tunnel: the device is installed (a whole install-pi.sh run would copy a new release, check for a Pi
  // and write /usr/local/bin/vendgate over the package's command).
  if (answers.tunnel) steps.push([script ?? '/opt/vendgate/current/scripts/install-pi.sh', '--tunnel-only', answers.tunnel]);
  steps.push(['systemctl', 'restart', 'vendgate']);
  steps.push(['vendgate', 'selftest', '--expect-service']);
  return steps;
}

/** Root on a machine booted with systemd: the steps can run here. */
function canApply(): boolean {
  return process.getuid?.() === 0 && existsSync('/run/systemd/system');
}
