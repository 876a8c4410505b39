import { z } from 'zod';
import { deviceSchema, slotsSchema } from './sections/device.js';
import { providerSchema } from './sections/provider.js';
import { pollSchema, httpSchema, storageSchema, logSchema, policySchema, kioskSchema } from './sections/service.js';
import { actuatorSchema, inputsSchema } from './sections/actuator.js';
import { mqttSchema } from './sections/mqtt.js';
import { fleetSchema } from './sections/fleet.js';

/** The one settings schema. Defaults live here and nowhere else. */
export const settingsSchema = z
  .object({
    device: deviceSchema,
    provider: providerSchema.prefault({}),
    poll: pollSchema.prefault({}),
    http: httpSchema.prefault({}),
    storage: storageSchema.prefault({}),
    actuator: actuatorSchema.prefault({}),
    inputs: inputsSchema.prefault({}),
    mqtt: mqttSchema.prefault({}),
    log: logSchema.prefault({}),
    policy: policySchema.prefault({}),
    kiosk: kioskSchema.prefault({}),
    fleet: fleetSchema.prefault({}),
    slots: slotsSchema.prefault({}),
  })
  .strict()
  .superRefine((settings, ctx) => {
    if (settings.fleet.webhookSource !== 'tunnel' && settings.mqtt.url === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['fleet', 'webhookSource'],
        message: `${settings.fleet.webhookSource} needs a broker: set mqtt.url (the fleet's broker), or use tunnel`,
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

export type Settings = z.infer<typeof settingsSchema>;
export type SettingsInput = z.input<typeof settingsSchema>;
export type CatalogItem = Settings['device']['catalog'][number];
