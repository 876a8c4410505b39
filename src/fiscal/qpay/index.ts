export { createQpayEbarimtRegister, type QpayEbarimtOptions } from './adapter.js';
