export { settingsSchema, type Settings, type SettingsInput, type CatalogItem } from './schema.js';
export { loadSettings, parseSettings, resolveConfigPath, SettingsError, SECRET_ENV, SECRET_SETTINGS, DEMO_CONFIG_PATH, DEVICE_CONFIG_PATH, type LoadedSettings } from './load.js';
