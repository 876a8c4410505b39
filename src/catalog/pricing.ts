import { ErrorCodes, VendgateError } from '../util/errors.js';
import type { CatalogItem } from '../settings/index.js';

/**
 * The item for `slot` in `items`, or VG_ERR_UNKNOWN_SLOT (400) naming the slots this machine has:
 * the one spelling of "which item is this slot", for an order (priced from it), the live catalog
 * and an operator's test vend.
 */
export function itemForSlot(items: readonly CatalogItem[], slot: string | undefined): CatalogItem {
  const found = slot === undefined ? undefined : items.find((entry) => entry.slot === slot);
  if (found) return found;
  const names = items.map((entry) => entry.slot).join(', ');
  throw new VendgateError(ErrorCodes.UNKNOWN_SLOT, slot ? `unknown slot "${slot}"; this machine has: ${names}` : `choose a slot: ${names}`);
}

/**
 * The settings' catalog as the order service asks a catalog (orders/ CatalogPort): no stock and no
 * jams, so everything listed is for sale. The money path uses it where no live catalog is given.
 */
export function staticCatalog(items: readonly CatalogItem[]): {
  forSale(slot: string | undefined): CatalogItem;
  assertSellable(item: string): void;
  item(slot: string): CatalogItem | undefined;
} {
  return {
    forSale: (slot) => itemForSlot(items, slot),
    assertSellable: () => {},
    item: (slot) => items.find((entry) => entry.slot === slot),
  };
}
