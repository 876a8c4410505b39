// What the device is beyond payments: whether it sells (availability), the operator's controls,
// the screen's view, and the reactions to hardware inputs. Each takes the narrow ports it uses;
// app.ts composes them, and nothing here imports app.ts.
export { createAvailability, type Availability, type OutOfServiceReason } from './availability.js';
export { createStateChanges, type StateChanges } from './state-changes.js';
export { createDeviceView, type DeviceView, type DeviceViewDeps } from './view.js';
export { createDeviceControl, type DeviceControlDeps } from './control.js';
export { createHardwareEventHandler, type HardwareEventDeps } from './hardware-events.js';
export { followStorageFaults, type StorageAlarmDeps } from './storage.js';
