export { createWebkassaRegister, type WebkassaOptions } from './adapter.js';
export { externalCheckNumberOf } from './wire.js';
