export { settingsSchema, type Settings, type SettingsInput, type CatalogItem } from './schema.js';
export { catalogSchema, catalogItemSchema, KIOSK_LANGUAGES } from './sections/device.js';
export {
  loadSettings,
  parseSettings,
  resolveConfigPath,
  SettingsError,
  SECRET_ENV,
  SECRET_SETTINGS,
  DEMO_CONFIG_PATH,
  DEVICE_CONFIG_PATH,
  type LoadedSettings,
  type PortOverrides,
} from './load.js';
export { fiscalSchema, redactUrl, type FiscalSettings } from './sections/fiscal.js';
export { type DexSettings } from './sections/dex.js';
export { priceProblems, priceBoundsFor, type PricingSettings, type PriceProblem } from './sections/commands.js';
export { loadOperatorProfile, type OperatorProfile } from './operator-profile.js';
export { selectionOn, unitsPerWhole } from './sections/actuator.js';
