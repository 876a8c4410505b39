export { openDatabase, migrate, listMigrations, databaseId, inTransaction, durably, prepared, type Db, type OpenOptions } from './open.js';
export { createRetention, type Retention, type RetentionSettings, type PruneCounts } from './retention.js';
export { createCheckpointer, type Checkpointer, type CheckpointSettings, type CheckpointResult } from './checkpoint.js';
export { acquireInstanceLock, lockPathFor, InstanceLockedError, type InstanceLock } from './instance-lock.js';
