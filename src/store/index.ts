export {
  openDatabase,
  migrate,
  NEW_DATABASE_PAGE_SIZE,
  PAGE_CACHE_KIB,
  listMigrations,
  databaseId,
  inTransaction,
  durably,
  observeDurableCommits,
  prepared,
  type Db,
  type DurableStep,
  type OpenOptions,
} from './open.js';
export { createRetention, type Retention, type RetentionSettings, type PruneCounts } from './retention.js';
export { createCheckpointer, type Checkpointer, type CheckpointSettings, type CheckpointResult } from './checkpoint.js';
export {
  recordLineage,
  markRestored,
  restoredBoundary,
  wasRestored,
  lineagePath,
  machineIdentity,
  marksOf,
  readSideMark,
  writeSideMark,
  readMeta,
  writeMeta,
  logLineage,
  databaseEpoch,
  META_BACKUP,
  META_DB_ACTION,
  type LineageMarks,
} from './lineage.js';
export {
  assessLineage,
  refineLineage,
  settleLineage,
  lineageHeadline,
  type LineageFinding,
  type LineageKind,
  type LineageSource,
  type RemoteLineage,
  type BackupMark,
  type DbAction,
} from './lineage-verdict.js';
export { acquireInstanceLock, lockPathFor, InstanceLockedError, type InstanceLock } from './instance-lock.js';
export {
  createStorageHealth,
  isStorageError,
  classifyStorageError,
  freeBytesAt,
  probeWrite,
  describeStorage,
  ballastPathFor,
  touchDatabase,
  STORAGE_ALARMS,
  type StorageHealth,
  type StorageFault,
  type StorageFaultKind,
} from './storage-health.js';
export { inspectWal, keepDiscardedWal, walPathFor, type WalFinding } from './wal.js';
export { cardInfo, databaseDir, type CardInfo } from './card.js';
export { recordRunningService, serviceRecordIn, type ServiceRecord } from './service-record.js';
export { backupDatabase, restoreDatabase, replaceDatabase, DbFileError, type BackupOutcome, type PutInPlaceOutcome } from './db-file.js';
