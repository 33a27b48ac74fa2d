/**
 * What a continuation stores: its `checkpoint` and `progress`, each converted
 * the way JSON.stringify writes it. A value JSON cannot hold is the handler's
 * error (`job.output_invalid`, not retried), reported with the path to the
 * offending value. Shared by the direct path (job-execution.ts) and the
 * transactional one (transactional-attempt.ts).
 */
import type { JsonValue } from '../model/json.js';
import { toStorableJson } from '../validation/jsonified.js';
import { formatJsonPath, toStorableText } from '../validation/storable.js';
import type { Continuation } from './continuation.js';
import { MAX_ERROR_MESSAGE_LENGTH } from './defaults.js';
import { JOB_OUTPUT_INVALID } from './errors.js';

export type ContinuationFields = { checkpoint?: JsonValue | null; progress?: JsonValue | null };

export function continuationFields(
  continuation: Continuation,
): { ok: true; fields: ContinuationFields } | { ok: false; failure: { code: typeof JOB_OUTPUT_INVALID; message: string; retryable: false } } {
  const fields: ContinuationFields = {};
  for (const name of ['checkpoint', 'progress'] as const) {
    const value = continuation[name];
    if (value === undefined) continue;
    const storable = toStorableJson(value);
    if (!storable.ok) {
      const message = toStorableText(
        `Invalid ${formatJsonPath([name, ...storable.problem.path])}: must be storable JSON: ${storable.problem.reason}`,
        MAX_ERROR_MESSAGE_LENGTH,
      );
      return { ok: false, failure: { code: JOB_OUTPUT_INVALID, message, retryable: false } };
    }
    fields[name] = (storable.value ?? null) as JsonValue | null;
  }
  return { ok: true, fields };
}
