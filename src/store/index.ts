export { openDatabase, migrate, listMigrations, databaseId, inTransaction, durably, type Db, type OpenOptions } from './open.js';
