/**
 * The local listener (127.0.0.1): the customer's kiosk page, the local JSON API, SSE, health,
 * metrics and, in the demo, the sandbox pay page. It only reads state and asks `deps`; it never
 * moves money or fires hardware.
 */
export { createKioskServer, DEFAULT_BODY_LIMIT_BYTES, type KioskServer, type KioskServerSettings } from './server.js';
export { DEFAULT_SSE_PING_MS } from './events.js';
export { formatAmount } from './public/money.js';
export { qrTerminal } from './qr.js';
export type { KioskDeps, DeviceState, OrderView, Phase, CreatedOrder, KioskOrders, SandboxPayments, KioskService } from './types.js';
