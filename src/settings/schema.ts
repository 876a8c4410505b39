import * as z from 'zod';
import { deviceSchema, slotsSchema } from './sections/device.js';
import { providerSchema } from './sections/provider.js';
import { pollSchema, httpSchema, storageSchema, logSchema, policySchema, kioskSchema } from './sections/service.js';
import { actuatorSchema, inputsSchema, unitsPerWhole } from './sections/actuator.js';
import { mqttSchema } from './sections/mqtt.js';
import { fleetSchema } from './sections/fleet.js';
import { commandsSchema, pricingSchema, priceProblems } from './sections/commands.js';
import { fiscalSchema } from './sections/fiscal.js';
import { dexSchema } from './sections/dex.js';

/**
 * The one settings schema. Defaults live here and nowhere else.
 *
 * Built when settings are checked and kept by nobody after: its ~800 zod schemas (~2 MB of V8's
 * heap with their closures, Node 22) were resident for the life of the process as module constants,
 * for one parse per start. Each section's schema is a function for the same reason
 * (settings/sections/); test/app/settings-not-resident.test.ts counts them in a running service.
 */
function buildSettingsSchema() {
  return z
    .object({
      device: deviceSchema(),
      provider: providerSchema().prefault({}),
      poll: pollSchema().prefault({}),
      http: httpSchema().prefault({}),
      storage: storageSchema().prefault({}),
      actuator: actuatorSchema().prefault({}),
      inputs: inputsSchema().prefault({}),
      mqtt: mqttSchema().prefault({}),
      log: logSchema().prefault({}),
      policy: policySchema().prefault({}),
      kiosk: kioskSchema().prefault({}),
      fleet: fleetSchema().prefault({}),
      slots: slotsSchema().prefault({}),
      commands: commandsSchema().prefault({}),
      pricing: pricingSchema().prefault({}),
      fiscal: fiscalSchema().prefault({}),
      dex: dexSchema().prefault({}),
    })
    .strict()
    .superRefine((settings, ctx) => {
      // The settings' own catalog is held to the same bounds as a remote one.
      for (const problem of priceProblems(settings.pricing, settings.device.catalog)) {
        ctx.addIssue({ code: 'custom', path: ['device', 'catalog', ...problem.path], message: problem.message });
      }
      const mdbScale = settings.actuator.serial.mdb.scale;
      if (settings.actuator.serial.profile === 'mdb' && mdbScale !== undefined && mdbScale !== unitsPerWhole(settings.device.currency)) {
        const per = unitsPerWhole(settings.device.currency);
        ctx.addIssue({
          code: 'custom',
          path: ['actuator', 'serial', 'mdb', 'scale'],
          message: `${mdbScale} disagrees with ${settings.device.currency} (${per} smallest unit${per === 1 ? '' : 's'} per 1.00): the machine's 2800 would be charged ${2800 * mdbScale}; remove the key (the currency decides)`,
        });
      }
      const plaintext = settings.mqtt.url.startsWith('mqtt://') || settings.mqtt.url.startsWith('ws://');
      if (settings.device.livemode && plaintext && !settings.mqtt.allowPlaintext) {
        ctx.addIssue({
          code: 'custom',
          path: ['mqtt', 'url'],
          message:
            'live mode sends the MQTT login and takes commands over this connection: use mqtts:// (TLS), or set mqtt.allowPlaintext: true for a broker reachable only on a trusted LAN',
        });
      }
      if (settings.fiscal.register === 'qpay' && settings.provider.name !== 'qpay') {
        ctx.addIssue({
          code: 'custom',
          path: ['fiscal', 'register'],
          message: `qpay files the eBarimt receipt of QPay payments with QPay's credentials: set provider.name qpay (it is ${settings.provider.name}), or use register ebarimt (a PosAPI)`,
        });
      }
      if (settings.fleet.webhookSource !== 'tunnel' && settings.mqtt.url === '') {
        ctx.addIssue({
          code: 'custom',
          path: ['fleet', 'webhookSource'],
          message: `${settings.fleet.webhookSource} needs a broker: set mqtt.url (the fleet's broker), or use tunnel`,
        });
      }
      if (settings.provider.name === 'kaspi' && settings.device.currency !== 'KZT') {
        ctx.addIssue({
          code: 'custom',
          path: ['device', 'currency'],
          message: `Kaspi QR charges in tenge: set device.currency to KZT (it is ${settings.device.currency})`,
        });
      }
      if (settings.provider.name === 'kaspi' && settings.poll.intervalMs > 5_000) {
        ctx.addIssue({
          code: 'custom',
          path: ['poll', 'intervalMs'],
          message: 'Kaspi QR has no webhooks: an open QR is polled every 2-5 s (at most 5000)',
        });
      }
      if (settings.fleet.webhookSource !== 'tunnel' && settings.provider.name === 'sandbox') {
        ctx.addIssue({
          code: 'custom',
          path: ['fleet', 'webhookSource'],
          message: 'the sandbox delivers its webhooks to this device itself: use tunnel',
        });
      }
      const delivery = settings.inputs.delivery !== undefined || (settings.actuator.kind === 'sim' && settings.actuator.sim.dropSensor);
      if (delivery && settings.device.mode !== 'vending') {
        ctx.addIssue({
          code: 'custom',
          path: ['inputs', 'delivery'],
          message: 'the delivery sensor confirms vends in vending mode; a turnstile confirms with inputs.passage',
        });
      }
      if (settings.inputs.delivery !== undefined && settings.actuator.kind === 'sim') {
        ctx.addIssue({
          code: 'custom',
          path: ['inputs', 'delivery'],
          message: 'the sim actuator has no chute: use actuator.sim.dropSensor: true to simulate the delivery sensor',
        });
      }
    });
}

type SettingsSchema = ReturnType<typeof buildSettingsSchema>;

/** The last one built, while something still holds it (a test that parses many settings in a row builds it once). */
let lastBuilt: WeakRef<SettingsSchema> | undefined;

/** The settings schema: built now, or the one still alive from a moment ago; nothing here keeps it. */
export function settingsSchema(): SettingsSchema {
  const alive = lastBuilt?.deref();
  if (alive) return alive;
  const built = buildSettingsSchema();
  lastBuilt = new WeakRef(built);
  return built;
}

export type Settings = z.infer<SettingsSchema>;
export type SettingsInput = z.input<SettingsSchema>;
export type CatalogItem = Settings['device']['catalog'][number];
