/**
 * The dashboard's actions: each one library operation, called in the
 * request's scope with the body's fields, so a tenant's embed can only act on
 * its own rows (another organization's job or run is `*.not_found`) and every
 * refusal of a value is the library's own coded error (a field the route does
 * not take is `dashboard.invalid_input`, naming it). The compare-and-* outcomes that
 * the library returns as a `kind` become errors here, because an operator's
 * click on a stale page must be told why nothing happened:
 * `dashboard.job_changed` (409, with the status and run now stored) and
 * `dashboard.cancellation_not_quiesced` (409, with `retryAfter`).
 *
 *   POST api/runs/:id/cancel                 { reason? }
 *   POST api/runs/:id/steps/:stepKey/complete { status: succeeded|failed|canceled, output?, reason?, errorCode?, errorMessage? }
 *   POST api/jobs/:id/cancel                 { reason? }
 *   POST api/jobs/:id/replay                 { expectedRunNumber, reason, replayRequestKey }
 *   POST api/jobs/:id/requeue                { expectedStatus, expectedRunNumber, statePolicy? }
 */
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { ConflictError, NotFoundError } from '../errors/runledger-error.js';
import { cancelJob } from '../queue/cancel.js';
import type { Job } from '../model/job-rows.js';
import { compareAndReplaySucceededJob } from '../replay/replay.js';
import { compareAndRequeueJob } from '../replay/requeue.js';
import { cancelWorkflowRun } from '../workflow/cancel.js';
import { completeExternalWorkflowStep, type CompleteExternalWorkflowStepInput } from '../workflow/external.js';
import { onlyFields } from './http.js';

type Body = Record<string, unknown>;

/** Absent and null fields are left out, so the library's own defaults and validation apply. */
function present(body: Body, ...names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.filter((name) => body[name] !== undefined && body[name] !== null).map((name) => [name, body[name]]));
}

/** The fields a route takes (present), any other refused, naming it. */
function fields(body: Body, ...names: string[]): Record<string, unknown> {
  onlyFields(body, names);
  return present(body, ...names);
}

function jobNotFound(jobId: string): NotFoundError {
  return new NotFoundError('job.not_found', 'The job does not exist.', { details: { jobId } });
}

function jobChanged(job: Job): ConflictError {
  return new ConflictError('dashboard.job_changed', 'The job changed since the page showed it; look again before acting.', {
    details: { jobId: job.id, status: job.status, runNumber: job.runNumber },
  });
}

export async function cancelRunAction(db: Db, scope: Scope, workflowRunId: string, body: Body) {
  return { run: await cancelWorkflowRun(db, { scope, workflowRunId, ...fields(body, 'reason') }) };
}

export async function completeStepAction(db: Db, scope: Scope, workflowRunId: string, stepKey: string, body: Body) {
  onlyFields(body, ['status', 'output', 'reason', 'errorCode', 'errorMessage']);
  const outcome = body.output === undefined ? { status: body.status } : { status: body.status, output: body.output };
  const input = {
    scope,
    workflowRunId,
    stepKey,
    outcome,
    ...(typeof body.reason === 'string' ? { statusReason: body.reason } : {}),
    ...present(body, 'errorCode', 'errorMessage'),
  } as CompleteExternalWorkflowStepInput;
  return { step: await completeExternalWorkflowStep(db, input) };
}

export async function cancelJobAction(db: Db, scope: Scope, jobId: string, body: Body) {
  return { job: await cancelJob(db, { scope, jobId, ...fields(body, 'reason') }) };
}

export async function replayJobAction(db: Db, scope: Scope, jobId: string, body: Body) {
  const result = await compareAndReplaySucceededJob(db, {
    scope,
    sourceJobId: jobId,
    ...fields(body, 'expectedRunNumber', 'reason', 'replayRequestKey'),
  } as Parameters<typeof compareAndReplaySucceededJob>[1]);
  if (result.kind === 'not_found') throw jobNotFound(jobId);
  if (result.kind === 'expectation_mismatch') throw jobChanged(result.actual);
  return { replay: result.replay };
}

export async function requeueJobAction(db: Db, scope: Scope, jobId: string, body: Body) {
  const result = await compareAndRequeueJob(db, {
    scope,
    jobId,
    statePolicy: 'preserve_progress_and_checkpoint',
    ...fields(body, 'expectedStatus', 'expectedRunNumber', 'statePolicy'),
  } as Parameters<typeof compareAndRequeueJob>[1]);
  switch (result.kind) {
    case 'requeued':
      return { job: result.job };
    case 'not_found':
      throw jobNotFound(jobId);
    case 'expectation_mismatch':
      throw jobChanged(result.actual);
    case 'cancellation_not_quiesced':
      throw new ConflictError('dashboard.cancellation_not_quiesced', 'The canceled handler may still be running; requeue after its lease ends.', {
        details: { jobId, retryAfter: result.retryAfter.toISOString() },
      });
  }
}
