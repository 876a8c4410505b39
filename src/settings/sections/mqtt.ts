import { z } from 'zod';

/** Owned by the MQTT issue. `url: embedded` starts an in-process broker; empty disables MQTT. */
export const mqttSchema = z.object({
  url: z.string().default('embedded'),
  prefix: z.string().min(1).regex(/^[^#+/]+$/, 'no /, # or +').default('vendgate'),
  username: z.string().optional(),
  password: z.string().optional(),
  telemetryIntervalSec: z.number().int().min(5).max(86_400).default(60),
  allowRemoteVend: z.boolean().default(false),
  homeAssistant: z.boolean().default(false),
  outboxMaxRows: z.number().int().min(100).max(10_000_000).default(100_000),
}).loose();
