export {
  createSandboxProvider,
  type SandboxProvider,
  type SandboxSettings,
  type SandboxDelivery,
  type SandboxInvoiceView,
} from './sandbox.js';
export { signSandboxPayload, verifySandboxSignature, SANDBOX_SIGNATURE_HEADER } from './signature.js';

import { dirname, join } from 'node:path';

/** The sandbox's own SQLite file, beside the gateway's database (the app, replay and the selftest share it). */
export function sandboxDbPath(storagePath: string): string {
  return join(dirname(storagePath), 'sandbox.db');
}
