import * as z from 'zod';
import { intIn } from './number.js';

/**
 * Owned by the hardware issue: relay (GPIO), serial (line / MDB), sim, and the GPIO inputs.
 * Pins are BCM numbers (GPIO17), never physical header positions or kernel sysfs numbers.
 */

/** BCM numbers that reach the 40-pin header. */
export const BCM_PIN_MIN = 0;
export const BCM_PIN_MAX = 27;

const bcmPin = () =>
  z
    .number({ message: 'a BCM GPIO number (0–27), e.g. 17 for GPIO17' })
    .int('a whole BCM GPIO number, e.g. 17')
    .min(BCM_PIN_MIN, 'BCM GPIO numbers start at 0')
    .max(
      BCM_PIN_MAX,
      'the 40-pin header has BCM GPIO 0–27: use the BCM number (GPIO17 → 17), not the physical pin position (11) or the kernel sysfs number (529)',
    );

function validRegex(value: string): boolean {
  try {
    new RegExp(value.replaceAll(/\{(slot|amount|reference)\}/g, 'x'));
    return true;
  } catch {
    return false;
  }
}

const pattern = (fallback: string) =>
  z
    .string()
    .min(1)
    .default(fallback)
    .refine(validRegex, 'not a valid regular expression (JavaScript syntax; escape \\ in YAML double quotes)');

const template = () =>
  z
    .string()
    .min(1)
    .regex(/^[\x20-\x7e\r\n\t]+$/, 'printable ASCII plus \\r \\n only (the machine reads bytes)');

const relaySchema = () =>
  z
    .object({
      /** `sysfs` (onoff, /sys/class/gpio) or `gpioset` (libgpiod tools, kernels without sysfs GPIO). */
      driver: z.enum(['sysfs', 'gpioset']).default('sysfs'),
      pin: bcmPin().optional(),
      /** Most relay boards sold for the Pi close the relay when the pin goes low. */
      activeLow: z.boolean().default(true),
      pulseMs: intIn(10, 10_000, 300),
      /** Pulses per vend when `creditPerPulse` is not set. */
      pulses: intIn(1, 100, 1),
      /** Relay open time between two pulses. */
      gapMs: intIn(10, 10_000, 300),
      /** Coin-pulse machines: one pulse is worth this much (smallest unit); pulses = amount / creditPerPulse. */
      creditPerPulse: z.number().int().positive().optional(),
      /** gpioset only: the libgpiod chip (name, number or /dev path). Default gpiochip0 (Pi 5 on kernels before 6.6.45: gpiochip4). */
      chip: z.string().min(1).optional(),
    })
    .strict();

const mdbSchema = () =>
  z
    .object({
      /** Our own limit on a machine's vend request that is never paid: then we send C,STOP. */
      sessionTimeoutSec: intIn(5, 3_600, 120),
      /** Board commands it forgets at power-on; re-sent after every open and reset (full lines, e.g. "C,SETCONF,mdb-always-idle=1"). */
      setconf: z
        .array(z.string().regex(/^[A-Z],[\x20-\x7e]*$/, 'a full board command line such as "C,SETCONF,mdb-always-idle=1"'))
        .default([]),
      /**
       * Smallest currency units per 1.00 of the machine's decimal amount. Default: from device.currency
       * (1 for MNT and KZT, which are charged in whole units; 100 for EUR). A value that disagrees with
       * the currency is refused at start: it would multiply or divide every price.
       */
      scale: z.number().int().positive().optional(),
      /** The decimal places the machine's prices carry (its setup); when the board reports another figure the reader stays off. */
      decimals: z.number().int().min(0).max(4).optional(),
      /**
       * Whose price is charged. `catalog` (default): the catalog in force; a machine asking another
       * price is denied with an mdb_price_mismatch alarm. `machine`: the machine's own price, if it is
       * inside the local `pricing` bounds.
       */
      prices: z.enum(['catalog', 'machine']).default('catalog'),
      /**
       * How a sale starts. `always-idle` (default): the customer selects on the machine, the machine
       * names item and price, the customer pays inside the machine's time limit. `authorization-first`:
       * the customer picks and pays on the kiosk, then vendgate starts a session with that credit and
       * approves the machine's request for exactly that item and price. Where the board reports the
       * machine's setup, always idle on a machine without it (level 1 or 2, or the level-3 option bit
       * 0x20 off) is refused in one line and the reader kept off; the selftest says what it supports.
       * `auto`: always idle when the board reports the machine has it switched on, authorization first
       * otherwise (every MDB machine can do that; also until the report comes, or when it never does).
       */
      session: z.enum(['always-idle', 'authorization-first', 'auto']).default('always-idle'),
      /**
       * The machine's limit, in seconds, on waiting for our approval of a vend request (its vend or
       * approving timeout; the reader's application maximum response time). No approval is sent after
       * it: an unpaid request is denied that long after it came. The board's report of the setup, when
       * it gives one, takes the smaller of the two. Absent: sessionTimeoutSec.
       */
      responseTimeSec: z.number().int().min(1).max(600).optional(),
    })
    .strict();

const serialSchema = () =>
  z
    .object({
      /** Prefer a stable name such as /dev/serial/by-id/usb-…; `ls /dev/serial/by-id/` lists them. */
      path: z.string().min(1).optional(),
      baudRate: intIn(300, 4_000_000, 9_600),
      profile: z.enum(['line', 'mdb']).default('line'),
      vendCommand: template().default('VEND {slot}\r\n'),
      okPattern: pattern('^OK\\b'),
      errorPattern: pattern('^(ERR|NAK)\\b'),
      /** Per step (waiting for the line, for the answer, for a status answer). Default 5000 (line), 60000 (mdb: the machine reports after dispensing). */
      timeoutMs: z.number().int().min(100).max(300_000).optional(),
      /**
       * Line profile: asks the machine about the last vend after a crash or a missing answer. The
       * answer patterns name the slot so an older vend of another slot never settles this one; put
       * {reference} in vendCommand and the patterns when the machine can echo it (then a stale answer
       * for the same slot cannot either).
       */
      statusCommand: template().optional(),
      statusVendedPattern: pattern('^(DONE|VENDED) {slot}\\b'),
      statusNotVendedPattern: pattern('^(FAILED {slot}\\b|NONE$)'),
      /** Longest wait between two reopen attempts after the device disappeared. */
      reconnectMaxMs: intIn(100, 300_000, 10_000),
      mdb: mdbSchema().prefault({}),
    })
    .strict();

const actuatorObject = () =>
  z
    .object({
      kind: z.enum(['sim', 'relay', 'serial']).default('sim'),
      sim: z
        .object({
          logPath: z.string().min(1).default('./data/actuations.jsonl'),
          /** How long one simulated actuation takes. */
          durationMs: intIn(0, 60_000, 50),
          /**
           * Development only: every actuation fails (`fail`: jam, `nak`: the machine refuses), hangs, gets
           * no answer after the command was sent (`timeout` → outcome unknown), (turnstile) nobody passes,
           * or (`no_drop`) the motor turns and nothing falls past the delivery sensor.
           */
          failMode: z.enum(['none', 'fail', 'nak', 'timeout', 'hang', 'not_passed', 'no_drop']).default('none'),
          /** Soak and development: the share (0..1) of actuations that fail as failMode says (`fail` when none); unset → every one does. */
          failRate: z.number().min(0).max(1).optional(),
          /** Seed of the failRate draws, so a run can be replayed. */
          failSeed: intIn(0, 4_294_967_295, 1),
          /** Slots whose motor is jammed: every vend there fails and nothing comes out (demo, soak). */
          jamSlots: z.array(z.string().min(1).max(16)).default([]),
          /** The simulated chute has a delivery sensor: a delivered item reports a drop; `no_drop` reports none. */
          dropSensor: z.boolean().default(false),
        })
        .strict()
        .prefault({}),
      relay: relaySchema().prefault({}),
      serial: serialSchema().prefault({}),
      turnstile: z
        .object({
          /** After the gate opened: no passage edge within this time → `not_passed`. */
          passTimeoutMs: intIn(1_000, 120_000, 8_000),
        })
        .strict()
        .prefault({}),
      /**
       * Vending with a delivery sensor (inputs.delivery, or sim.dropSensor): after the machine says it
       * vended, a drop must be seen within this; none → the vend failed and the money goes back.
       */
      deliveryWindowMs: intIn(100, 60_000, 3_000),
      /** Longest a vend may take before the runner gives up. Default: the configured actuator's worst case + 5 s, at least 30 s. */
      vendTimeoutMs: z.number().int().min(100).max(600_000).optional(),
    })
    .strict();

const TIMEOUT_MARGIN_MS = 5_000;

/** How long one fire() can take at most with these settings (pulse trains depend on the amount: checked at fire time). */
function worstCaseMs(actuator: z.infer<ReturnType<typeof actuatorObject>>, serialTimeoutMs: number): number {
  switch (actuator.kind) {
    case 'sim':
      return actuator.sim.durationMs + (actuator.sim.dropSensor ? actuator.deliveryWindowMs : 0);
    case 'relay': {
      const r = actuator.relay;
      return r.pulses * (r.pulseMs + r.gapMs) + actuator.turnstile.passTimeoutMs;
    }
    case 'serial':
      // line: wait for the line, wait for the answer, ask the status; mdb has no status step.
      return serialTimeoutMs * (actuator.serial.profile === 'line' && actuator.serial.statusCommand ? 3 : 2);
  }
}

export const actuatorSchema = () =>
  actuatorObject()
    .superRefine((actuator, ctx) => {
      if (actuator.kind === 'relay' && actuator.relay.pin === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['relay', 'pin'],
          message: 'actuator.kind relay needs relay.pin: the BCM number of the pin wired to the relay board input (IN1)',
        });
      }
      if (actuator.kind === 'serial' && actuator.serial.path === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['serial', 'path'],
          message: 'actuator.kind serial needs serial.path, e.g. /dev/serial/by-id/usb-… or /dev/ttyAMA0 (ls /dev/serial/by-id/)',
        });
      }
      if (actuator.kind === 'serial' && actuator.serial.profile === 'line' && !actuator.serial.vendCommand.includes('{slot}')) {
        ctx.addIssue({
          code: 'custom',
          path: ['serial', 'vendCommand'],
          message: 'the vend command must name the slot with {slot}, e.g. "VEND {slot}\\r\\n"',
        });
      }
      const serialTimeoutMs = actuator.serial.timeoutMs ?? defaultSerialTimeoutMs(actuator.serial.profile);
      const worst = worstCaseMs(actuator, serialTimeoutMs);
      if (actuator.vendTimeoutMs !== undefined && actuator.vendTimeoutMs < worst) {
        ctx.addIssue({
          code: 'custom',
          path: ['vendTimeoutMs'],
          message: `shorter than the ${actuator.kind} actuator's own worst case (${worst} ms): raise vendTimeoutMs or lower the actuator timings`,
        });
      }
    })
    .transform((actuator) => {
      const timeoutMs = actuator.serial.timeoutMs ?? defaultSerialTimeoutMs(actuator.serial.profile);
      const vendTimeoutMs = actuator.vendTimeoutMs ?? Math.max(30_000, worstCaseMs(actuator, timeoutMs) + TIMEOUT_MARGIN_MS);
      return { ...actuator, serial: { ...actuator.serial, timeoutMs }, vendTimeoutMs };
    });

function defaultSerialTimeoutMs(profile: 'line' | 'mdb'): number {
  return profile === 'mdb' ? 60_000 : 5_000;
}

const inputSchema = () =>
  z
    .object({
      pin: bcmPin(),
      /** A dry contact to ground with a pull-up reads low when closed: activeLow true. */
      activeLow: z.boolean().default(true),
      debounceMs: intIn(0, 5_000, 50),
    })
    .strict();

const INPUT_NAMES = ['button', 'inhibit', 'fireAlarm', 'passage', 'delivery'] as const;

export const inputsSchema = () =>
  z
    .object({
      /** Starts an order (turnstile without a screen). */
      button: inputSchema().optional(),
      /** The machine tells us to stop selling while active. */
      inhibit: inputSchema().optional(),
      /** Turnstile: opens the gate and stops orders while active. */
      fireAlarm: inputSchema().optional(),
      /** Turnstile PASS output: confirms that a person went through. */
      passage: inputSchema().optional(),
      /** Vending: the delivery sensor (IR beam in the chute) confirms that an item fell; see actuator.deliveryWindowMs. */
      delivery: inputSchema().optional(),
    })
    .strict()
    .superRefine((inputs, ctx) => {
      const seen = new Map<number, string>();
      for (const name of INPUT_NAMES) {
        const pin = inputs[name]?.pin;
        if (pin === undefined) continue;
        const other = seen.get(pin);
        if (other)
          ctx.addIssue({
            code: 'custom',
            path: [name, 'pin'],
            message: `BCM ${pin} is already inputs.${other}.pin: each input needs its own pin`,
          });
        else seen.set(pin, name);
      }
    });

export type ActuatorSettings = z.infer<ReturnType<typeof actuatorSchema>>;
export type InputsSettings = z.infer<ReturnType<typeof inputsSchema>>;
export type InputName = (typeof INPUT_NAMES)[number];
export { INPUT_NAMES };

/** Tugrik and tenge are charged in whole units although ISO 4217 gives them two decimals. */
const WHOLE_UNIT_CURRENCIES = new Set(['MNT', 'KZT']);

/** Smallest units in 1.00 of `currency`: 1 for MNT and KZT, 10^(ISO minor digits) otherwise (100 when unknown). */
export function unitsPerWhole(currency: string): number {
  if (WHOLE_UNIT_CURRENCIES.has(currency)) return 1;
  try {
    const digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    return 10 ** digits;
  } catch {
    return 100;
  }
}

/** The MDB amount scale in force: the setting when given (checked against the currency at start), else the currency's. */
export function mdbScale(actuator: Pick<ActuatorSettings, 'serial'>, currency: string): number {
  return actuator.serial.mdb.scale ?? unitsPerWhole(currency);
}

/**
 * Where the customer chooses: on the machine (an MDB machine in always-idle: the machine names item
 * and price, and only such a request can be approved), or on the kiosk (everything else, and MDB
 * authorization first: the paid credit starts the machine's session). `inForce`: the MDB
 * actuator's own answer (session: auto learns it from the machine); absent, the setting's.
 */
export function selectionOn(
  actuator: Pick<ActuatorSettings, 'kind' | 'serial'>,
  inForce?: 'always-idle' | 'authorization-first' | null,
): 'machine' | 'kiosk' {
  const mdb = actuator.kind === 'serial' && actuator.serial.profile === 'mdb';
  if (!mdb) return 'kiosk';
  const session = actuator.serial.mdb.session;
  const style = inForce ?? (session === 'auto' ? 'authorization-first' : session);
  return style === 'always-idle' ? 'machine' : 'kiosk';
}
