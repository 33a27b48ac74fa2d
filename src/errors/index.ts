export * from './runledger-error.js';
export { databaseErrorInfo, isConnectionFault, isDatabaseError, normalizeDatabaseError, RETRYABLE_SQLSTATES, type DatabaseErrorInfo } from './database-error.js';
