import { ErrorCodes, VendgateError } from '../util/errors.js';
import { priceBoundsFor, type PricingSettings } from '../settings/index.js';

/** Whose price an MDB vend request is charged at (`actuator.serial.mdb.prices`), and the local bounds. */
export interface MdbPricePolicy {
  prices: 'catalog' | 'machine';
  pricing?: PricingSettings;
}

export interface MdbPriced {
  slot: string;
  itemName: string;
  amount: number;
  /** The catalog's and the machine's price differ (the alarm names both); null when they agree. */
  mismatch: { catalogPrice: number; machinePrice: number } | null;
}

/**
 * The price of a machine's vend request: the catalog's, never merely what the machine names. A
 * machine asking another price (a wrong scale or decimals setting on either side, a price changed on
 * the machine and not in the catalog) is refused with VG_ERR_PRICE_MISMATCH unless the operator
 * chose the machine's prices, and then only inside the local `pricing` bounds.
 */
/** What pricing needs of the catalog (the order service's CatalogPort). */
export interface PriceSource {
  forSale(slot: string | undefined): { slot: string; name: string; price: number };
}

export function priceMdbRequest(catalog: PriceSource, item: string, machinePrice: number, policy: MdbPricePolicy): MdbPriced {
  const listed = catalog.forSale(item);
  const base = { slot: listed.slot, itemName: listed.name };
  if (listed.price === machinePrice) return { ...base, amount: listed.price, mismatch: null };
  const mismatch = { catalogPrice: listed.price, machinePrice };
  if (policy.prices === 'machine') {
    const { floor, ceiling } = policy.pricing ? priceBoundsFor(policy.pricing, listed.slot) : {};
    const outside =
      floor !== undefined && machinePrice < floor
        ? `below the floor ${floor}`
        : ceiling !== undefined && machinePrice > ceiling
          ? `above the ceiling ${ceiling}`
          : null;
    if (!outside) return { ...base, amount: machinePrice, mismatch };
    throw new VendgateError(
      ErrorCodes.PRICE_MISMATCH,
      `the machine asks ${machinePrice} for item ${listed.slot}, ${outside} (pricing in the local settings); the catalog says ${listed.price}`,
      { details: { item: listed.slot, ...mismatch } },
    );
  }
  throw new VendgateError(
    ErrorCodes.PRICE_MISMATCH,
    `the machine asks ${machinePrice} for item ${listed.slot}, the catalog says ${listed.price}: denied (set the machine's price, or actuator.serial.mdb.prices: machine)`,
    { details: { item: listed.slot, ...mismatch } },
  );
}
