/**
 * What the local listener needs from the rest of the app. The kiosk never moves money or fires
 * hardware itself: it asks the order service and shows the device state.
 */

/** What the customer's screen shows. `phase` is derived from the current order and the device. */
export type Phase =
  | 'idle'
  | 'creating'
  | 'awaiting_payment'
  | 'paid'
  | 'vending'
  | 'vended'
  | 'vend_failed'
  | 'refunding'
  | 'refunded'
  | 'expired'
  | 'canceled'
  | 'failed'
  | 'vend_uncertain'
  | 'out_of_service'
  | 'offline';

export interface OrderView {
  orderId: number;
  reference: string;
  state: string;
  source: string;
  slot: string | null;
  itemName: string;
  amount: number;
  currency: string;
  provider: string;
  invoiceId: string | null;
  payUrl: string | null;
  /** Bank-app deep links for a customer paying on a phone (QPay): https or an allowed app scheme only. */
  appLinks?: { name: string; link: string }[];
  /** ISO 8601. */
  expiresAt: string | null;
  createdAt: string;
  paidAt: string | null;
  vendedAt: string | null;
  refundedAt: string | null;
  errorCode: string | null;
  history: { at: string; from: string | null; to: string; reason: string }[];
}

export interface DeviceState {
  deviceId: string;
  mode: 'vending' | 'turnstile';
  phase: Phase;
  /** Why the device takes no orders (out_of_service / offline), for the operator line on screen. */
  reason: string | null;
  currency: string;
  language: 'mn' | 'kk' | 'ru' | 'en';
  provider: string;
  /** On every screen: whom to call. Null when kiosk.supportContact is not set. */
  supportContact: string | null;
  /** The apps that pay this provider's QR (kiosk.paymentApps); null: the page's line for the provider. */
  paymentApps: string[] | null;
  /**
   * Every item of the catalog in use. `names` per language (the page shows its language's, else
   * `name`); `available` false (sold out, jammed) is not offered to the customer.
   */
  catalog: {
    slot: string;
    name: string;
    names?: Partial<Record<'mn' | 'kk' | 'ru' | 'en', string>>;
    price: number;
    available: boolean;
    unavailable: 'sold_out' | 'jammed' | null;
  }[];
  /** The catalog version in use ("settings" until one was published). */
  catalogVersion: string;
  fare: number | null;
  autoStart: boolean;
  /** `machine`: an MDB machine in always idle — the customer chooses on the machine and pays the QR shown here; the kiosk takes no order. */
  selection: 'kiosk' | 'machine';
  resultScreenSec: number;
  /** The order on screen: open, or closed less than resultScreenSec ago. */
  order: OrderView | null;
  /**
   * The fiscal receipt of the order on screen: `issued` with what its QR encodes (and eBarimt's
   * lottery number) while the service still holds them in memory, `pending` while it is on its way
   * ("the receipt follows"); null where no receipt is owed (no register, no delivered vend).
   */
  receipt: { status: 'issued' | 'pending'; qrData: string | null; lottery: string | null } | null;
  /** ISO: when the phase last changed. */
  since: string;
  /** ISO: server time, so the page can correct its countdown for clock differences. */
  now: string;
}

export interface CreatedOrder {
  orderId: number;
  reference: string;
  state: string;
  invoiceId: string | null;
  payUrl: string | null;
  /** ISO 8601. */
  expiresAt: string | null;
}

export interface KioskOrders {
  /** Throws VendgateError: UNKNOWN_SLOT (400), DEVICE_BUSY (409), OUT_OF_SERVICE (503), PROVIDER_* (502/503). */
  create(input: { slot?: string; source: 'kiosk' }): Promise<CreatedOrder>;
  get(orderId: number): OrderView | null;
  /** Throws ORDER_NOT_FOUND (404), ORDER_STATE (409) when it can no longer be canceled. */
  cancel(orderId: number): Promise<OrderView>;
}

/** Demo only (provider.name = sandbox): the pay page and its button. */
export interface SandboxPayments {
  describe(
    invoiceId: string,
  ): { id: string; amount: number; currency: string; reference: string; status: string; expiresAt: number } | null;
  /** Throws VendgateError ORDER_STATE / ORDER_NOT_FOUND when it cannot be paid. */
  pay(invoiceId: string): Promise<void>;
}

export interface KioskDeps {
  orders: KioskOrders;
  state(): DeviceState;
  /** Called on every state change; returns the unsubscribe function. */
  subscribe(listener: (state: DeviceState) => void): () => void;
  /** Liveness and readiness for /healthz. */
  health(): { ok: boolean; checks: Record<string, { ok: boolean; detail: string }> };
  /** Prometheus text exposition for /metrics. */
  metrics(): string;
  sandbox?: SandboxPayments;
  /** Stock per slot and refills (GET /api/slots, POST /api/slots/:slot/refill). */
  slots?: KioskSlots;
  /** The PIN-protected service menu (GET /api/service/status and the routes behind it). */
  service?: KioskService;
}

export interface KioskSlots {
  list(): unknown[];
  /** Throws UNKNOWN_SLOT (400). */
  refill(slot: string, count: number): unknown;
}

/**
 * The technician's service menu (/api/service/…, behind the PIN). Every action is the CLI's own
 * (catalog slots refill / clear-jam) and none moves money: no refund, resolve or test vend here.
 */
export interface KioskService {
  /** The PIN (VENDGATE_SERVICE_PIN); null: the menu is off and says how to turn it on. */
  pin: string | null;
  overview(): {
    identity: { deviceId: string; release: string; provider: string; livemode: boolean; database: string };
    slots: unknown[];
    orders: { orderId: number; reference: string; state: string; slot: string | null; amount: number; createdAt: string }[];
    alarms: { name: string; severity: string; message: string; raisedAt: string }[];
    sales: unknown;
  };
  /** The same in-process selftest as the MQTT `selftest` command. */
  selftest(): Promise<{ ok: boolean; checks: { name: string; status: string; detail: string; hint: string }[] }>;
  /** Audited with by: 'service-menu'. Throws UNKNOWN_SLOT / BAD_REQUEST. */
  refill(slot: string, count: number): unknown;
  clearJam(slot: string): unknown;
}
