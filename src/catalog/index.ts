export { createCatalog, CATALOG_TOPIC, type Catalog, type CatalogDeps, type AppliedCatalog, type OfferedItem } from './catalog.js';
export { catalogDocumentSchema, parseCatalogDocument, SETTINGS_VERSION, type CatalogDocument } from './document.js';
export { itemForSlot, staticCatalog } from './pricing.js';
export { jamAlarm, lowStockAlarm, type SlotHooks, type SlotView, type Slots } from './slots.js';
