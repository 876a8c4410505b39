/**
 * A vending machine controller (VMC) with a Qibixx-style MDB board in front of it, as the gateway
 * sees it: the board's text protocol on a serial line. Written from the published MDB facts
 * (cashless device states Inactive → Disabled → Enabled → Session Idle → Vend; the VMC is the
 * master; always-idle and authorization-first sessions; out-of-sequence commands make the VMC reset
 * the reader; the board's settings are volatile), not from vendgate's code or its simulator.
 * The MDB byte level (5 ms first byte, 1 ms between bytes) stays on the board: this model starts at
 * the board's lines. It is transport-free: `feed()` takes what the gateway wrote, `onSay` carries
 * what the board writes back (pty.ts joins it to a real serial line).
 */

export type CashlessState = 'inactive' | 'disabled' | 'enabled' | 'session-idle' | 'vend';

export interface Quirks {
  /** The VMC resets the reader right after BEGIN SESSION (authorization first). */
  resetAfterBeginSession: boolean;
  /** RESET after SETUP this many times before the VMC goes on (a setup loop). */
  setupLoops: number;
  /** The VMC sends READER ENABLE again while a session or vend runs (the board reports ENABLED). */
  reenableMidSession: boolean;
  /** BEGIN SESSION is only taken after this many attempts. */
  beginSessionIgnored: number;
  /** SESSION CANCEL REQUEST is ignored; the VMC keeps polling in its session. */
  ignoreSessionCancel: boolean;
  /** VEND SUCCESS names this item instead of the one approved. */
  successForItem: string | null;
  /** VEND SUCCESS is reported twice. */
  duplicateSuccess: boolean;
  /** After a deny the VMC vends anyway (a machine set to "free vend on deny", or a fault). */
  vendAfterDeny: boolean;
}

/** Level-3 optional feature bits (MDB 4.x): always idle is 0x20. */
export const OPTION_BITS = {
  ftl: 0x01,
  money32: 0x02,
  multiCurrency: 0x04,
  negativeVend: 0x08,
  dataEntry: 0x10,
  alwaysIdle: 0x20,
} as const;

export interface VmcOptions {
  /** Always idle is a level 3 option the VMC has switched on; authorization first is every level's way. */
  style: 'always-idle' | 'authorization-first';
  /** Cashless feature level: level 3 carries option bits (always idle among them), level 1 none. */
  level: 1 | 3;
  /**
   * What the board reports of the setup as the VMC brings the reader up:
   * `c,SETUP,<level>,<currency>,<scale>,<decimals>,<response s>[,<options hex>]`. `full`: with the
   * level-3 options the VMC switched on (none at level 1); `without-options`: a firmware that stops
   * at the response time; `none`: a board that reports no setup.
   */
  setupReport: 'full' | 'without-options' | 'none';
  /** ISO 4217 numeric code, scale factor, decimal places the VMC works in. */
  currency: number;
  scaleFactor: number;
  decimals: number;
  /** The VMC's own limit on waiting for an approval in Vend (always idle). */
  vendTimeoutMs: number;
  /** The VMC's limit on a Session Idle without a selection (authorization first). */
  sessionTimeoutMs: number;
  /** Between two lines the board reports (one POLL). */
  pollMs: number;
  /** From the approval to the item in the chute. */
  vendMs: number;
  quirks: Partial<Quirks>;
}

export interface Dispensed {
  item: string;
  /** The approval it followed, or null: goods out without one. */
  approved: string | null;
}

const DEFAULTS: VmcOptions = {
  style: 'always-idle',
  level: 3,
  setupReport: 'full',
  currency: 1496,
  scaleFactor: 1,
  decimals: 0,
  vendTimeoutMs: 30_000,
  sessionTimeoutMs: 60_000,
  pollMs: 20,
  vendMs: 200,
  quirks: {},
};

export class VmcModel {
  readonly options: VmcOptions;
  state: CashlessState = 'inactive';
  /** What the board was told (`C,...`), in order. */
  readonly received: string[] = [];
  /** What the board said (`c,...`), in order. */
  readonly said: string[] = [];
  /** The board's volatile settings: lost at every power-on and VMC reset. */
  settings: string[] = [];
  readonly dispensed: Dispensed[] = [];
  /** Approvals and denies as the VMC took them. */
  readonly approvals: string[] = [];
  readonly denies: { state: CashlessState }[] = [];
  readonly gaveUp: string[] = [];
  /** Times the VMC reset the reader (out of sequence, quirks, power). */
  resets = 0;
  outOfSequence: string[] = [];
  onSay: (line: string) => void = () => {};

  private on = false;
  private request: { item: string; price: string } | null = null;
  private credit: string | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private queue: string[] = [];
  private pump: ReturnType<typeof setTimeout> | null = null;
  private setupLoopsLeft: number;
  private beginIgnoredLeft: number;
  private lastDenied: { item: string } | null = null;
  private closed = false;

  constructor(options: Partial<VmcOptions> = {}) {
    this.options = { ...DEFAULTS, ...options, quirks: { ...options.quirks } };
    if (this.options.style === 'always-idle' && this.options.level < 3) throw new Error('always idle is a level 3 option');
    this.setupLoopsLeft = this.options.quirks.setupLoops ?? 0;
    this.beginIgnoredLeft = this.options.quirks.beginSessionIgnored ?? 0;
  }

  /** A price as the VMC names it: its units with its decimal places (2800 → "2800"; 150 at 2 decimals → "1.50"). */
  price(units: number): string {
    const { decimals } = this.options;
    return decimals === 0 ? String(units) : (units / 10 ** decimals).toFixed(decimals);
  }

  /** Always idle: the customer presses a selection on the machine. */
  select(item: string, price: string): boolean {
    const from = this.options.style === 'always-idle' ? 'enabled' : 'session-idle';
    if (this.state !== from) return false;
    this.request = { item, price };
    this.state = 'vend';
    this.say(`c,STATUS,VEND,${price},${item}`);
    this.arm(this.options.vendTimeoutMs, () => {
      // VEND CANCEL from the VMC: the reader answers VEND DENIED and the session completes.
      this.gaveUp.push(`vend ${item}`);
      this.request = null;
      this.endSession();
    });
    if (this.options.quirks.reenableMidSession) this.later(() => this.say('c,STATUS,ENABLED'));
    return true;
  }

  /** The machine's own power cycle: the VMC resets the reader, the board's settings go with it. */
  powerCycleMachine(): void {
    this.reset('machine power cycle');
  }

  /** The board's power-on: its volatile settings are lost and it reports the reader inactive. */
  powerCycleBoard(): void {
    this.clearTimer();
    this.on = false;
    this.settings = [];
    this.request = null;
    this.credit = null;
    this.state = 'inactive';
    this.say('c,STATUS,INACTIVE');
  }

  /** One line the gateway wrote to the board. */
  feed(line: string): void {
    if (this.closed) return;
    this.received.push(line);
    const [cmd, ...args] = line.split(',');
    if (cmd !== 'C') return;
    const sub = args[0];
    if (sub === '0') {
      this.on = false;
      this.clearTimer();
      this.state = 'inactive';
      return;
    }
    if (sub === 'SETCONF') {
      if (this.on) this.say('c,ERR,SETCONF needs C,0 first');
      else this.settings.push(line);
      return;
    }
    if (sub === '1') return this.enable();
    if (sub === 'START') return this.beginSession(args[1] ?? '');
    if (sub === 'VEND') return this.approve(args[1] ?? '');
    if (sub === 'STOP') return this.stop();
  }

  close(): void {
    this.closed = true;
    this.clearTimer();
    if (this.pump) clearTimeout(this.pump);
  }

  private enable(): void {
    this.on = true;
    if (this.state !== 'inactive') return;
    // The VMC brings the reader up: RESET, SETUP (a loop of them for some), ENABLE.
    this.say('c,STATUS,INACTIVE');
    this.bringUp();
  }

  private bringUp(): void {
    if (this.setupLoopsLeft > 0) {
      this.setupLoopsLeft--;
      this.resets++;
      this.say('c,STATUS,INACTIVE');
      this.later(() => this.bringUp());
      return;
    }
    this.state = 'disabled';
    this.say('c,STATUS,DISABLED');
    const o = this.options;
    if (o.setupReport !== 'none') {
      const setup = `c,SETUP,${o.level},${o.currency},${o.scaleFactor},${o.decimals},${Math.round(o.vendTimeoutMs / 1000)}`;
      const options = o.style === 'always-idle' ? OPTION_BITS.alwaysIdle : 0;
      this.say(o.setupReport === 'full' && o.level === 3 ? `${setup},${options.toString(16).padStart(8, '0')}` : setup);
    }
    this.state = 'enabled';
    this.say('c,STATUS,ENABLED');
  }

  private beginSession(funds: string): void {
    if (this.state !== 'enabled') {
      this.say('c,ERR,START reader not enabled');
      return;
    }
    if (this.beginIgnoredLeft > 0) {
      this.beginIgnoredLeft--;
      return;
    }
    this.credit = funds;
    this.state = 'session-idle';
    this.say(`c,STATUS,IDLE,${funds}`);
    if (this.options.quirks.resetAfterBeginSession) {
      this.options.quirks.resetAfterBeginSession = false;
      this.later(() => this.reset('reset after BEGIN SESSION'));
      return;
    }
    this.arm(this.options.sessionTimeoutMs, () => {
      this.gaveUp.push('session idle');
      this.endSession();
    });
    if (this.options.quirks.reenableMidSession) this.later(() => this.say('c,STATUS,ENABLED'));
  }

  private approve(amount: string): void {
    if (this.state !== 'vend' || !this.request) return this.outOfSequenceReset(`C,VEND in ${this.state}`);
    const { item, price } = this.request;
    if (Number(amount) !== Number(price)) {
      // An approval for another amount: the VMC takes it as a deny.
      this.denies.push({ state: 'vend' });
      this.request = null;
      this.endSession();
      return;
    }
    if (this.credit !== null && Number(this.credit) < Number(price)) {
      this.denies.push({ state: 'vend' });
      this.request = null;
      this.endSession();
      return;
    }
    this.clearTimer();
    this.approvals.push(`${item}@${price}`);
    this.request = null;
    // The motor turns; a power cycle meanwhile (reset clears the timer) leaves the item inside.
    this.arm(this.options.vendMs, () => this.vend(item, `${item}@${price}`));
  }

  private vend(item: string, approved: string | null): void {
    this.dispensed.push({ item, approved });
    const q = this.options.quirks;
    const named = q.successForItem ?? null;
    const success = named ? `c,VEND,SUCCESS,${named}` : 'c,VEND,SUCCESS';
    this.say(success);
    if (q.duplicateSuccess) this.say(success);
    this.state = 'session-idle';
    this.say('c,STATUS,IDLE');
    this.endSession();
  }

  private stop(): void {
    if (this.state === 'vend' && this.request) {
      const { item } = this.request;
      this.denies.push({ state: 'vend' });
      this.request = null;
      this.lastDenied = { item };
      if (this.options.quirks.vendAfterDeny) {
        this.clearTimer();
        this.vend(item, null);
        return;
      }
      this.endSession();
      return;
    }
    if (this.state === 'session-idle') {
      this.denies.push({ state: 'session-idle' });
      if (this.options.quirks.ignoreSessionCancel) return;
      this.endSession();
      return;
    }
    this.outOfSequenceReset(`C,STOP in ${this.state}`);
  }

  private endSession(): void {
    this.clearTimer();
    this.credit = null;
    this.state = 'enabled';
    this.say('c,STATUS,ENABLED');
  }

  private outOfSequenceReset(what: string): void {
    this.outOfSequence.push(what);
    this.reset(what);
  }

  private reset(_why: string): void {
    this.clearTimer();
    this.resets++;
    this.request = null;
    this.credit = null;
    this.settings = [];
    this.on = false;
    this.state = 'inactive';
    this.say('c,STATUS,INACTIVE');
  }

  private arm(ms: number, then: () => void): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.timer = null;
      then();
    }, ms);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private later(action: () => void): void {
    setTimeout(() => {
      if (!this.closed) action();
    }, this.options.pollMs * 3);
  }

  /** Lines leave one per POLL, in order. */
  private say(line: string): void {
    this.queue.push(line);
    if (!this.pump) this.flush();
  }

  private flush(): void {
    const line = this.queue.shift();
    if (line === undefined || this.closed) {
      this.pump = null;
      return;
    }
    this.said.push(line);
    this.onSay(line);
    this.pump = setTimeout(() => this.flush(), this.options.pollMs);
  }

  /** For tests: whether the last deny was followed by goods out. */
  get deniedItem(): string | null {
    return this.lastDenied?.item ?? null;
  }
}
