/**
 * The common `enqueueJob` input checked without zod: `{ jobType, payload }` with at most `organizationId`,
 * `priority` and `idempotencyKey` beside them, each a plain valid value. The checks are the schema's own
 * (inputs.ts: the same storable-text and storable-JSON walks, the same bounds); anything else (another
 * field, a field present but undefined or null, any value the schema would refuse) returns undefined and
 * goes through `enqueueJobInputSchema`, which names the field. zod's parse of this shape was ~2.5 us of a
 * single enqueue's ~19 us of client CPU (bench/README.md, "Enqueue's client CPU").
 */
import type { ParsedEnqueueJobInput } from './inputs.js';
import { findJsonProblem, textProblem } from '../validation/storable.js';
import { MAX_ORGANIZATION_ID_LENGTH } from '../validation/primitives.js';

const COMMON_FIELDS = new Set(['jobType', 'payload', 'organizationId', 'priority', 'idempotencyKey']);

export function parseCommonJobInput(input: unknown): ParsedEnqueueJobInput | undefined {
  if (typeof input !== 'object' || input === null || Object.getPrototypeOf(input) !== Object.prototype) return undefined;
  const record = input as Record<string, unknown>;
  // Own names, non-enumerable ones included: the schema reads a field however it was defined.
  const names = Object.getOwnPropertyNames(record);
  for (const name of names) if (!COMMON_FIELDS.has(name)) return undefined;
  const count = names.length;
  const { jobType, payload, organizationId, priority, idempotencyKey } = record;
  if (!nonBlankText(jobType, 200) || !('payload' in record) || findJsonProblem(payload) !== undefined) return undefined;
  const parsed: ParsedEnqueueJobInput = { jobType, payload: payload as ParsedEnqueueJobInput['payload'] };
  let seen = 2;
  if ('organizationId' in record) {
    if (!nonBlankText(organizationId, MAX_ORGANIZATION_ID_LENGTH)) return undefined;
    parsed.organizationId = organizationId;
    seen += 1;
  }
  if ('priority' in record) {
    if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < -2147483648 || priority > 2147483647) return undefined;
    parsed.priority = priority;
    seen += 1;
  }
  if ('idempotencyKey' in record) {
    if (!nonBlankText(idempotencyKey, Number.POSITIVE_INFINITY) || Buffer.byteLength(idempotencyKey, 'utf8') > 512) return undefined;
    parsed.idempotencyKey = idempotencyKey;
    seen += 1;
  }
  return seen === count ? parsed : undefined;
}

/** Storable, not blank, at most `max` UTF-16 units: the schema's `nonBlank(max)` (and `organizationId`). */
function nonBlankText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max && textProblem(value) === undefined && value.trim().length > 0;
}
