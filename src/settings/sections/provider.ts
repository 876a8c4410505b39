import * as z from 'zod';
import { intIn } from './number.js';

export const providerSchema = () =>
  z
    .object({
      name: z.enum(['sandbox', 'gerege', 'qutpay', 'qpay', 'kaspi']).default('sandbox'),
      /** Base URL of the provider's API (gerege, qutpay). Ignored by the sandbox. */
      baseUrl: z.url({ protocol: /^https?$/, message: 'an http(s) URL such as https://api.example.com' }).optional(),
      /** Gerege OAuth2 client id. The secret comes from VENDGATE_PROVIDER_CLIENT_SECRET. */
      clientId: z.string().min(1).optional(),
      clientSecret: z.string().min(1).optional(),
      /** QutPay API key (qp_test_… / qp_live_…), from VENDGATE_PROVIDER_API_KEY. */
      apiKey: z.string().min(1).optional(),
      /** QPay: the invoice_code QPay assigned to the merchant. */
      invoiceCode: z.string().min(1).max(64).optional(),
      /** QPay: invoice_receiver_code (QPay's examples use `terminal` for a point of sale). */
      invoiceReceiverCode: z.string().min(1).max(64).default('terminal'),
      /** QPay: sender_branch_code, when the merchant has branches registered. */
      senderBranchCode: z.string().min(1).max(64).optional(),
      /** QPay: the public https URL QPay calls after a payment (the tunnel's or the fleet relay's /webhooks/qpay). */
      callbackUrl: z.url({ protocol: /^https?$/, message: 'an http(s) URL such as https://vm-001.example.com/webhooks/qpay' }).optional(),
      /** Webhook signing secrets, all accepted (rotation), from VENDGATE_WEBHOOK_SECRETS. */
      webhookSecrets: z.array(z.string().min(1)).default([]),
      invoiceTtlSec: intIn(30, 3600, 120),
      captureMode: z.enum(['automatic', 'manual']).default('automatic'),
      /** Gerege signature timestamp tolerance. */
      toleranceSec: intIn(1, 3600, 300),
      /** Timeout of one HTTP call to the provider. */
      requestTimeoutMs: intIn(100, 60_000, 5_000),
      /** Upper bound on all the retries of one create call; the order fails after it. */
      createDeadlineMs: intIn(1_000, 300_000, 20_000),
      /** A refund whose outcome is unknown for this long raises an alarm for a person. */
      refundUnknownAlarmSec: intIn(10, 86_400, 600),
      /** Demo: also serve the sandbox pay page on every interface at this port, for a phone on the same network; 0 = off. */
      sandboxLanPort: intIn(0, 65_535, 0),
      /** The address phones reach this machine at, used in the pay URL and QR; absent: the first LAN IPv4 address. */
      sandboxLanAddress: z
        .string()
        .regex(/^[A-Za-z0-9.:-]+$/, 'an IP address or host name such as 192.168.1.20')
        .optional(),
    })
    .superRefine((provider, ctx) => {
      if (provider.name === 'sandbox') return;
      if (provider.sandboxLanPort > 0)
        ctx.addIssue({
          code: 'custom',
          path: ['sandboxLanPort'],
          message: `only the sandbox has a pay page here; ${provider.name} shows its own`,
        });
      if (!provider.baseUrl) ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: `required for provider ${provider.name}` });
      if (provider.name === 'kaspi') {
        // Kaspi QR: the device calls the fleet relay's Kaspi listener (baseUrl), signing with its own secret; no webhooks.
        if (!provider.clientSecret)
          ctx.addIssue({
            code: 'custom',
            path: ['clientSecret'],
            message: "required for provider kaspi: set VENDGATE_PROVIDER_CLIENT_SECRET to this device's secret at the fleet relay",
          });
        if (provider.captureMode === 'manual')
          ctx.addIssue({ code: 'custom', path: ['captureMode'], message: 'kaspi has no manual capture: use automatic' });
        return;
      }
      if (provider.name === 'qpay') {
        // QPay callbacks are unsigned hints: no webhook secret; the callback URL and the merchant's codes instead.
        if (!provider.clientId)
          ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'required for provider qpay (QPay client id)' });
        if (!provider.clientSecret)
          ctx.addIssue({
            code: 'custom',
            path: ['clientSecret'],
            message: 'required for provider qpay: set VENDGATE_PROVIDER_CLIENT_SECRET',
          });
        if (!provider.invoiceCode)
          ctx.addIssue({ code: 'custom', path: ['invoiceCode'], message: 'required for provider qpay: the invoice_code QPay assigned' });
        if (!provider.callbackUrl)
          ctx.addIssue({ code: 'custom', path: ['callbackUrl'], message: 'required for provider qpay: the public URL of /webhooks/qpay' });
        if (provider.captureMode === 'manual')
          ctx.addIssue({ code: 'custom', path: ['captureMode'], message: 'qpay has no manual capture: use automatic' });
        return;
      }
      if (provider.name === 'gerege') {
        if (!provider.clientId) ctx.addIssue({ code: 'custom', path: ['clientId'], message: 'required for provider gerege' });
        if (!provider.clientSecret)
          ctx.addIssue({
            code: 'custom',
            path: ['clientSecret'],
            message: 'required for provider gerege: set VENDGATE_PROVIDER_CLIENT_SECRET',
          });
      }
      if (provider.name === 'qutpay' && !provider.apiKey) {
        ctx.addIssue({ code: 'custom', path: ['apiKey'], message: 'required for provider qutpay: set VENDGATE_PROVIDER_API_KEY' });
      }
      if (provider.name === 'qutpay' && provider.captureMode === 'manual') {
        ctx.addIssue({ code: 'custom', path: ['captureMode'], message: 'qutpay has no manual capture: use automatic' });
      }
      if (provider.webhookSecrets.length === 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['webhookSecrets'],
          message: `required for provider ${provider.name}: set VENDGATE_WEBHOOK_SECRETS (comma-separated)`,
        });
      }
    });
