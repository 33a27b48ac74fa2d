/**
 * The typed forms (`enqueueJob(db, definition, payload)`, `enqueueJobs`,
 * `recordJobEnqueueIntent`, a builder's `.job(key, definition, payload)`,
 * `defineSchedule({ job, payload })`) check the payload against the
 * definition's schema when they are called, not only when a worker claims the
 * job: the compiler checks it for TypeScript callers, but a JavaScript caller
 * (or a cast) would otherwise store a payload that can only dead-letter. A
 * refusal is a validation error naming `payload.<path>` (prefixed as the
 * caller's field, e.g. `3.payload.amount`), thrown before anything is
 * written. The payload as given is what is stored: the worker parses it again
 * at claim, so a transforming schema is not applied twice.
 */
import type { ErrorCode } from '../errors/codes.js';
import { ValidationError } from '../errors/runledger-error.js';
import { issuePath, type StandardSchemaV1 } from '../validation/standard-schema.js';
import { issueReason } from '../validation/parse.js';
import { formatJsonPath, toStorableText } from '../validation/storable.js';
import type { AnyJobDefinition } from './contract.js';

/** The schema's messages are the host's text: made printable and bounded before they are put in an error. */
const MAX_MESSAGE = 1_000;

function refusal(issues: ReadonlyArray<StandardSchemaV1.Issue>, prefix: readonly (string | number)[], code: ErrorCode): ValidationError {
  const issue = issues[0];
  const field = formatJsonPath([...prefix, 'payload', ...(issue ? issuePath(issue) : []).map(String)]);
  const message = toStorableText(`Invalid ${field}: ${issueReason(issue?.message ?? '')}`, MAX_MESSAGE);
  return new ValidationError(code, field, message, {
    details: {
      issues: issues.map((i) => ({
        path: formatJsonPath([...prefix, 'payload', ...issuePath(i).map(String)]),
        message: toStorableText(issueReason(i.message), MAX_MESSAGE),
      })),
    },
  });
}

/** Checks `payload` with `definition`'s schema; rejects with a validation error naming the payload's field. */
export async function checkDefinitionPayload(
  definition: AnyJobDefinition,
  payload: unknown,
  prefix: readonly (string | number)[],
  code: ErrorCode,
): Promise<void> {
  const result = await definition.schema['~standard'].validate(payload);
  const { issues } = result as StandardSchemaV1.Result<unknown>;
  if (issues) throw refusal(issues, prefix, code);
}

/**
 * The same check for the synchronous forms (the workflow builder,
 * `defineSchedule`). A schema that validates asynchronously cannot be waited
 * for there: its verdict is left to the worker, which checks every payload
 * at claim (`job.payload_invalid`).
 */
export function checkDefinitionPayloadSync(definition: AnyJobDefinition, payload: unknown, prefix: readonly (string | number)[], code: ErrorCode): void {
  const result = definition.schema['~standard'].validate(payload);
  if (typeof (result as { then?: unknown }).then === 'function') {
    // Not awaited: a rejection here must not surface as an unhandled one.
    (result as Promise<unknown>).then(undefined, () => undefined);
    return;
  }
  const { issues } = result as StandardSchemaV1.Result<unknown>;
  if (issues) throw refusal(issues, prefix, code);
}
