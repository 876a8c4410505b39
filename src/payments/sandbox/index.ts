export { createSandboxProvider, type SandboxProvider, type SandboxSettings, type SandboxDelivery } from './sandbox.js';
export { signSandboxPayload, verifySandboxSignature, SANDBOX_SIGNATURE_HEADER } from './signature.js';
