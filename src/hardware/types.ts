/**
 * The contract between the vend runner and the physical world. Hardware knows nothing of money:
 * it is told to deliver one thing and says what happened.
 */

export interface VendRequest {
  orderId: number;
  reference: string;
  /** Catalog slot (vending) or null (turnstile / pulse machine). */
  slot: string | null;
  /** Smallest currency unit; pulse machines derive the pulse count from it, MDB approves it. */
  amount: number;
  currency: string;
  mode: 'vending' | 'turnstile';
}

export type VendOutcome =
  | { result: 'vended'; detail?: string }
  /**
   * Definitely not delivered (NAK, error line, relay error, line down before sending). `slotFault`:
   * the machine tried this slot and nothing came out (its error answer, no drop at the delivery
   * sensor, a jam): counts toward taking the slot out of sale. Absent when nothing was tried (line
   * down, busy, session gone): the slot is not to blame.
   */
  | { result: 'failed'; reason: string; slotFault?: true }
  /** Turnstile opened but nobody passed within passTimeoutMs. */
  | { result: 'not_passed'; detail?: string }
  /**
   * The command may have reached the machine but no answer said what happened (serial timeout or
   * disconnect after writing, relay error mid pulse train). Neither vended nor refundable: the core
   * parks the order as vend_uncertain and never refunds it blindly.
   */
  | { result: 'unknown'; detail: string };

export interface ActuatorHealth {
  ok: boolean;
  detail: string;
}

export interface Actuator {
  readonly kind: 'sim' | 'relay' | 'serial';
  /** Drives outputs to their safe state and opens devices. Called once before any fire(). */
  start(): Promise<void>;
  /**
   * Delivers one vend. Called only after the claim is committed to disk. Resolves within
   * `actuator.vendTimeoutMs` (the settings default it to the actuator's worst case + 5 s). Returns
   * `failed` only when nothing was delivered for sure; `unknown` when a command went out unanswered.
   * The actuators in this folder catch their own errors and never throw (a throw counts as `failed`).
   */
  fire(request: VendRequest): Promise<VendOutcome>;
  /**
   * After a crash while firing: ask the machine whether the vend happened, where it can tell
   * (serial status command). Absent or 'unknown' leaves the order `vend_uncertain` for a person.
   */
  queryOutcome?(request: VendRequest): Promise<'vended' | 'not_vended' | 'unknown'>;
  /**
   * MDB: the order behind the machine's vend request will not be paid (expired, canceled, provider
   * down): deny the session (`C,STOP`). Absent for actuators whose machine does not wait for us.
   */
  denySession?(reason: string): Promise<void>;
  /**
   * MDB: the session style in force — the setting, or with `session: auto` what the machine's
   * setup report says (authorization first until it says always idle is on).
   */
  sessionStyle?(): 'always-idle' | 'authorization-first';
  health(): ActuatorHealth;
  /** Safe state, close devices. Safe to call twice. */
  stop(): Promise<void>;
}

/** Things the machine tells us (inputs, MDB vend requests). The app turns them into orders/state. */
export type HardwareEvent =
  | { type: 'button' }
  | { type: 'inhibit'; active: boolean }
  | { type: 'fire_alarm'; active: boolean }
  | { type: 'line'; up: boolean; detail: string }
  /** MDB: the vending machine asks to sell `item` for `amount` (smallest unit). */
  | { type: 'vend_request'; item: string; amount: number; budgetSec?: number }
  /** MDB: something the machine did that a person must see (goods out without our approval, a setup we cannot sell with). */
  | { type: 'machine_alarm'; name: string; message: string; active: boolean }
  /** MDB: the customer or machine canceled the session. */
  | { type: 'session_cancel' }
  /** MDB, session: auto: the machine's report changed the style in force; the screen follows. */
  | { type: 'session_style'; style: 'always-idle' | 'authorization-first' };

export interface HardwareInputs {
  start(): Promise<void>;
  on(listener: (event: HardwareEvent) => void): void;
  /** Current levels, for the selftest. */
  read(): Record<string, boolean | null>;
  stop(): Promise<void>;
}
