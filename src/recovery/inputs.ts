/**
 * Public inputs of workflow recovery, parsed before anything touches a
 * connection: a bad input writes nothing, takes no lock, and the
 * ValidationError (`workflow.invalid_input`) names the field.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { scopeSchema, type Scope } from '../db/scope.js';
import { bigintPageFields } from '../queue/inputs.js';
import { RECOVERY_MODES, type WorkflowRecoveryMode } from '../model/workflow-rows.js';
import { nonBlank, requestKey, UUID_PATTERN, uuid } from '../validation/primitives.js';

/** Recovery reasons are audit text, bounded like replay reasons. */
export const MAX_RECOVERY_REASON_LENGTH = 1_000;

export const recoverWorkflowRunInputSchema = z
  .strictObject({
    sourceRunId: uuid,
    scope: scopeSchema,
    /** Identity of one recovery action: retries reuse it; another recovery of the same run uses another key. */
    requestKey,
    reason: nonBlank(MAX_RECOVERY_REASON_LENGTH),
    mode: z.enum(RECOVERY_MODES).default('full'),
    again: z.boolean().default(false),
    fromCallIndex: z.number().int('must be an integer').min(0, 'must not be negative').max(2_147_483_647).optional(),
  })
  .superRefine((request, ctx) => {
    // A full recovery reuses nothing: a cut point there would be silently ignored.
    if (request.fromCallIndex !== undefined && request.mode !== 'failed_only') {
      ctx.addIssue({ code: 'custom', path: ['fromCallIndex'], message: "needs mode 'failed_only' (a full recovery reuses no step)" });
    }
  });

export interface RecoverWorkflowRunInput {
  /** The terminal run to recover (never modified). */
  sourceRunId: string;
  scope: Scope;
  /** Non-blank, at most 512 bytes: the same key and request again returns the same recovery. */
  requestKey: string;
  /** Non-blank audit text, at most 1,000 characters. */
  reason: string;
  /** `full` (default): every step runs again. `failed_only`: steps that succeeded are carried over with their outputs. */
  mode?: WorkflowRecoveryMode;
  /**
   * A run already recovered (under another request key) is refused with `workflow.recovery_already_recovered`
   * naming its recovery; `true` recovers it once more all the same. Default false.
   */
  again?: boolean;
  /**
   * A durable function run only, with mode `failed_only`: reuse only the steps its body called before this
   * call index (0-based); the body runs again from that call on. Without it a failed-only recovery of a
   * function reuses every step the source recorded. A DAG run is refused (`workflow.recovery_not_a_function`).
   */
  fromCallIndex?: number;
}
export type ParsedRecoveryRequest = z.output<typeof recoverWorkflowRunInputSchema>;

export const listWorkflowRecoveriesInputSchema = z
  .strictObject({ runId: uuid, scope: scopeSchema })
  .extend(bigintPageFields(new RegExp(`^[0-9]{1,19}:${UUID_PATTERN}$`, 'i'), 'listWorkflowRecoveries'));

export interface ListWorkflowRecoveriesInput {
  /** The source run whose recoveries are listed. */
  runId: string;
  scope: Scope;
  /** At most 500; default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/**
 * What a request key is bound to: every field of the request but the key and
 * the source (which identify it) and `again` (which only permits a second
 * recovery, it does not shape one), as a sha256 fingerprint. A field added to
 * the request later joins the fingerprint without a schema change.
 */
export function recoveryRequestHash(request: ParsedRecoveryRequest): string {
  return (
    createHash('sha256')
      // fromCallIndex is left out when absent (JSON.stringify drops undefined), so hashes recorded before it existed still match.
      .update(JSON.stringify({ mode: request.mode, reason: request.reason, fromCallIndex: request.fromCallIndex }))
      .digest('hex')
  );
}
