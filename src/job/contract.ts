/**
 * The job contract, as types: what a handler is given (`JobContext`, its step
 * inputs) and what a definition is (`JobDefinition` and the types read from
 * it). Types only and importing nothing that imports them back, so the
 * runtime halves (define-job.ts, context.ts, step-inputs.ts) and every floor
 * above (queue, workflow, schedules, worker) can refer to the contract
 * without a cycle.
 */
import type { PrismaClientLike } from '../client/types.js';
import type { WorkflowDependencyReleaseMode, WorkflowStepStatus } from '../model/workflow-rows.js';
import type { JsonValue } from '../model/json.js';
import type { StandardSchemaV1 } from '../validation/standard-schema.js';
import type { Jsonified } from '../validation/jsonified.js';
import type { Continuation } from './continuation.js';
import type { BackoffPolicy } from './defaults.js';
import type { WorkerLogger } from './logger.js';
import type { RetryPolicy } from './retry-policy.js';

/**
 * A job handler: receives the parsed payload and the context of this attempt,
 * returns the job's output. The output is stored the way JSON.stringify
 * writes it (see `Jsonified`); undefined or null: no output. A returned
 * `continueNow(...)` / `continueAfter(...)` is no output: it ends this slice
 * and asks for the next (src/job/continuation.ts).
 */
export type JobHandler<Payload, Output> = (payload: Payload, ctx: JobContext) => Promise<Output> | Output;

/** A definition's own execution settings (the fourth argument of `defineJob`). */
export interface JobSettings<Input = any> {
  /** Attempts and backoff for this job type. */
  retry?: RetryPolicy;
  /**
   * A concurrency key for every job of this type, unless an enqueue gives its own: at most `limit` of the key's
   * jobs are LEASED at once, across workers and processes. `key` may be computed from the enqueued payload
   * (e.g. one key per tenant); `limit` is the key's limit unless an operator pinned it (`setConcurrencyLimit`).
   */
  concurrency?: { key: string | ((payload: Input) => string); limit: number };
  /**
   * A rate limit for every job of this type, unless an enqueue gives its own: at most `limit` starts per
   * `periodMs` of the key's jobs on average, `burst` (default `limit`) at once, across workers and processes.
   * `key` may be computed from the enqueued payload; the values are the key's unless an operator pinned them
   * (`setRateLimit`).
   */
  rateLimit?: { key: string | ((payload: Input) => string); limit: number; periodMs: number; burst?: number };
  /**
   * A fairness key for every job of this type, unless an enqueue gives its own: claims take turns between the
   * keys, `weight` (default 1) jobs of a key per round. `key` may be computed from the payload and the job's
   * organization (e.g. `(_, job) => job.organizationId ?? 'none'` for one turn per tenant).
   */
  fairness?: { key: string | ((payload: Input, job: { organizationId: string | null }) => string); weight?: number };
  /** How long one attempt may run (its signal aborts; a retryable `job.timeout` is recorded). Default 300. */
  timeoutSeconds?: number;
  /** Claim order of this type's jobs (higher first) when an enqueue or step does not say. Default 0. */
  priority?: number;
}

/**
 * The transaction client of a Prisma client `C`, as its own
 * `$transaction(async (tx) => ...)` types it: the generated client's
 * `Omit<PrismaClient, ...>`, or an `$extends` client's extended one. (The
 * callback form is the last `$transaction` overload, the one inference reads.)
 */
export type TransactionClientOf<C> = C extends { $transaction(fn: (tx: infer T) => any, ...rest: any[]): any } ? T : never;

/** The settings of a transactional job type: `transaction` is the host's root Prisma client. */
export interface TransactionalJobSettings<C extends PrismaClientLike, Input = any> extends JobSettings<Input> {
  /**
   * Run every attempt inside an interactive READ COMMITTED transaction of
   * this client (the host's own, on the worker's database): the handler gets
   * it as `ctx.tx`, and its writes, the job's outcome and whatever it
   * enqueues through `ctx.tx` commit together, or roll back together.
   */
  transaction: C;
}

/**
 * The typed handle of one job type. `Payload` is what the handler receives
 * (the schema's output), `Input` what an enqueue gives (the schema's input),
 * `Output` what the handler returns.
 */
export interface JobDefinition<Payload = unknown, Output = unknown, Input = Payload> {
  readonly jobType: string;
  /** Validates the stored payload before the handler runs; a failure dead-letters the job (`job.payload_invalid`). */
  readonly schema: StandardSchemaV1<Input, Payload>;
  readonly handler: JobHandler<Payload, Output>;
  /** `retry.maxAttempts` and `timeoutSeconds`: undefined when the definition leaves them to the defaults. */
  readonly maxAttempts: number | undefined;
  readonly timeoutSeconds: number | undefined;
  /** The definition's `priority`: undefined when it leaves it to the default. */
  readonly priority: number | undefined;
  /** Resolved: the definition's backoff with the defaults filled in. */
  readonly backoff: Readonly<BackoffPolicy>;
  /** The definition's concurrency key (or how to compute it from a payload) and limit; undefined: none. */
  readonly concurrency: { readonly key: string | ((payload: Input) => string); readonly limit: number } | undefined;
  /** The definition's rate limit (its key, or how to compute it from a payload); undefined: none. */
  readonly rateLimit:
    | { readonly key: string | ((payload: Input) => string); readonly limit: number; readonly periodMs: number; readonly burst?: number | undefined }
    | undefined;
  /** The definition's fairness key (or how to compute it) and weight; undefined: none. */
  readonly fairness:
    | { readonly key: string | ((payload: Input, job: { organizationId: string | null }) => string); readonly weight?: number | undefined }
    | undefined;
  /** The client each attempt runs in a transaction of (`settings.transaction`); undefined: a direct handler. */
  readonly transaction: PrismaClientLike | undefined;
}

/** Any definition, whatever its payload and output types (what a worker's `handlers` list holds). */
// The handler's parameter is contravariant, so a precise definition fits only a wide one declared with `any`.
export type AnyJobDefinition = JobDefinition<any, any, any>;

/** What an enqueue of `D` must give as its payload: the schema's input type. */
export type JobPayload<D extends AnyJobDefinition> = D extends JobDefinition<any, any, infer Input> ? Input : never;
/** What the handler of `D` receives: the schema's output type. */
export type JobParsedPayload<D extends AnyJobDefinition> = D extends JobDefinition<infer Payload, any, any> ? Payload : never;
/**
 * What `D`'s job stores as its output: what the handler returns, as JSON reads
 * it back. Null only where the handler may return nothing (`void`, `undefined`,
 * `null`), so a handler that always returns an object gives an object type
 * whose fields read without a null check.
 */
export type JobOutput<D extends AnyJobDefinition> = D extends JobDefinition<any, infer Output, any> ? StoredOutput<Exclude<Output, Continuation>> : never;
/** Returning nothing is stored as SQL NULL (`Jsonified` drops `undefined`, so it is added back as `null`). */
type StoredOutput<O> = Jsonified<O> | (undefined extends O ? null : never);

/**
 * `ctx`, the second argument of every handler: who this attempt is, the
 * signal that tells it to stop, and the writes it may make while it runs
 * (progress, checkpoint, stage). Every write is fenced to this attempt's
 * lease: once the lease is gone it throws `job.lease_owner_mismatch` and
 * changes nothing.
 */
export interface JobContext {
  readonly jobId: string;
  readonly jobType: string;
  /** 1 for the original run; a replay or requeue starts the next run. */
  readonly runNumber: number;
  /** 1-based attempt within the run (this one included). */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** null: a job without an organization. */
  readonly organizationId: string | null;
  /** The worker holding the lease. */
  readonly workerId: string;
  /**
   * Stable for every attempt of this run of the job (`runledger:<jobId>:<runNumber>`;
   * a replay, a new run, gets a new one): pass it to an external API that
   * deduplicates requests (a payment provider's `Idempotency-Key`), so an
   * attempt that re-runs after a crash does not repeat the effect there.
   */
  readonly idempotencyKey: string;
  /** True when the job backs a workflow step. */
  readonly workflowManaged: boolean;
  /** The workflow run of the step this job backs; null for a direct job. The run's organization is `organizationId`. */
  readonly workflowRunId: string | null;
  /** The key of the step this job backs; null for a direct job. */
  readonly stepKey: string | null;
  /**
   * The step's prerequisites with their terminal status and output
   * (`ctx.prerequisites.get('crawl')?.output`; typed with
   * `ctx.prerequisites.get('crawl', crawl)`). Empty for a direct job.
   */
  readonly prerequisites: StepPrerequisites;
  /** The checkpoint a previous attempt saved (or this one, after `saveCheckpoint`). */
  readonly checkpoint: JsonValue | null;
  /** The last saved progress (`saveProgress`'s value, or `{ processed, total }` from `progress`). */
  readonly lastProgress: JsonValue | null;
  /** The job's stage label: its enqueue's, then the last `setStage`. */
  readonly stage: string | null;
  /**
   * Aborted when the job times out (`timeoutSeconds`), the lease is lost, or
   * the worker shuts down past its drain deadline. `signal.reason` is a
   * JobAbortedError whose `reason` says which. Pass it to fetch, pg, timers.
   */
  readonly signal: AbortSignal;
  /** The worker's logger, with jobId and jobType bound. */
  readonly logger: WorkerLogger;
  /** When this attempt times out (`timeoutSeconds` after it started): a long job returns `continueNow` before it. */
  readonly deadline: Date;
  /** Milliseconds left until `deadline` (0 once it passed). */
  remainingMs(): number;
  /** Saves progress (JSON; null clears) and extends the lease. */
  saveProgress(progress: JsonValue | null): Promise<void>;
  /** Saves a checkpoint a later attempt will start from (JSON; null clears) and extends the lease. */
  saveCheckpoint(checkpoint: JsonValue | null): Promise<void>;
  /**
   * Moves the job to another stage (non-blank, at most 128 bytes): stored on
   * the job with a STAGE_CHANGED event. Fenced to this attempt's lease.
   */
  setStage(stage: string): Promise<void>;
  /**
   * Records numeric progress (non-negative integers, `processed <= total`
   * when a total is given): stored as the job's progress with a PROGRESS
   * event. Fenced to this attempt's lease.
   */
  progress(processed: number, total?: number): Promise<void>;
}

/**
 * `ctx` of a transactional job type (`defineJob(..., { transaction: prisma })`):
 * `tx` is the open interactive transaction of the host's client the attempt
 * runs in. Every write through it commits with the job's outcome or rolls
 * back with it. The context's own writes (progress, checkpoint, stage,
 * heartbeats) are not in it: they report on the attempt and commit at once.
 */
export type TransactionalJobContext<T> = JobContext & { readonly tx: T };

/** One prerequisite of the running step, as it ended. */
export interface StepPrerequisite<Output = JsonValue> {
  readonly key: string;
  /** SUCCEEDED for every `afterSuccess` prerequisite; FAILED or CANCELED possible for an `afterTerminal` one. */
  readonly status: Extract<WorkflowStepStatus, 'SUCCEEDED' | 'FAILED' | 'CANCELED'>;
  readonly releaseMode: WorkflowDependencyReleaseMode;
  /** null: an external step. */
  readonly jobType: string | null;
  /** Its output; null when it recorded none or did not succeed. */
  readonly output: Output | null;
}

/** The prerequisites of the running step, by key. Empty for a job that backs no step. */
export interface StepPrerequisites {
  readonly size: number;
  keys(): string[];
  /** Every prerequisite, in key order. */
  all(): StepPrerequisite[];
  /** The prerequisite `key`; undefined when the step has no such prerequisite. */
  get(key: string): StepPrerequisite | undefined;
  /**
   * The prerequisite `key`, its output typed by the definition that ran it.
   * Throws a TerminalError (`workflow.prerequisite_type_mismatch`: the job
   * dead-letters) when that step ran another job type, so a wrong definition
   * is caught instead of mistyping the output.
   */
  get<D extends AnyJobDefinition>(key: string, definition: D): StepPrerequisite<Exclude<JobOutput<D>, null>> | undefined;
}

/** The workflow side of a step's job (the handler context's workflow fields). */
export interface StepInputs {
  workflowRunId: string;
  stepKey: string;
  prerequisites: StepPrerequisites;
}
