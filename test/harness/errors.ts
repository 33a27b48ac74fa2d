/** Catching what an operation refuses with, for tests that assert on the error itself. */
import { expect } from 'vitest';
import { type ErrorCode, isRunledgerError, type RunledgerError } from '../../src/index.js';

/** The error an operation throws (synchronously) or rejects with; undefined when it succeeds. */
export async function errorOf(operation: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    await (typeof operation === 'function' ? operation() : operation);
  } catch (error) {
    return error;
  }
  return undefined;
}

/** The RunledgerError an operation fails with; anything else (or success) fails the test. */
export async function runledgerErrorOf(operation: Promise<unknown> | (() => unknown)): Promise<RunledgerError> {
  const error = await errorOf(operation);
  expect(isRunledgerError(error), `expected a RunledgerError, got ${String(error)}`).toBe(true);
  return error as RunledgerError;
}

/** Expects the operation to be refused with validation error `code`, naming `field`. */
export async function expectInvalid(operation: Promise<unknown> | (() => unknown), code: ErrorCode, field: string): Promise<void> {
  const error = await errorOf(operation);
  expect(isRunledgerError(error, code)).toBe(true);
  expect((error as { field: string }).field).toBe(field);
}
