import { z } from 'zod';
import { deviceSchema } from './sections/device.js';
import { providerSchema } from './sections/provider.js';
import { pollSchema, httpSchema, storageSchema, logSchema, policySchema, kioskSchema } from './sections/service.js';
import { actuatorSchema, inputsSchema } from './sections/actuator.js';
import { mqttSchema } from './sections/mqtt.js';

/** The one settings schema. Defaults live here and nowhere else. */
export const settingsSchema = z.object({
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
}).strict();

export type Settings = z.infer<typeof settingsSchema>;
export type SettingsInput = z.input<typeof settingsSchema>;
export type CatalogItem = Settings['device']['catalog'][number];
