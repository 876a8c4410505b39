export { createEbarimtRegister, type EbarimtOptions } from './adapter.js';
export { billIdSuffixOf, BILL_ID_SUFFIX_DIGITS } from './wire.js';
