export { ERROR_CODES, JOB_OUTCOME_CODES, type ErrorCode, type JobOutcomeCode } from './codes.js';
export * from './runledger-error.js';
export {
  databaseErrorInfo,
  isConnectionFault,
  isDatabaseError,
  normalizeDatabaseError,
  RETRYABLE_SQLSTATES,
  type DatabaseErrorInfo,
} from './database-error.js';
