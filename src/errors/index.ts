export * from './runledger-error.js';
export { databaseErrorInfo, normalizeDatabaseError, RETRYABLE_SQLSTATES, type DatabaseErrorInfo } from './database-error.js';
