/**
 * A typed builder for workflow runs; `build()` yields the plain-object input
 * that `enqueueWorkflowRun` validates (the builder adds convenience, not rules).
 *
 * @example
 * const run = workflow('profiles.refresh', { requestedBy: 'u1' })
 *   .job('crawl', crawl, { url })            // a definition: payload checked, output typed
 *   .job('score', 'profiles.score', {})
 *   .afterSuccess('score', ['crawl'])
 *   .external('approval')
 *   .afterTerminal('approval', ['score'])
 *   .job('persist', 'profiles.persist', {})
 *   .afterSuccess('persist', ['approval'])
 *   .resultStep('persist')
 *   .build();
 */
import { ValidationError } from '../errors/runledger-error.js';
import type { JsonValue } from '../model/json.js';
import { checkDefinitionPayloadSync } from '../job/payload.js';
import { isJobDefinition } from '../job/define-job.js';
import type { AnyJobDefinition, JobOutput, JobPayload } from '../job/contract.js';
import type { WorkflowDependencyInput, WorkflowRunInput, WorkflowStepInput } from './run-definition.js';

export interface JobStepSettings {
  priority?: number;
  /** Default: the definition's `retry.maxAttempts` (a step given by definition), else 5. */
  maxAttempts?: number;
  /** Default: the definition's `timeoutSeconds` (a step given by definition), else 300. */
  timeoutSeconds?: number;
  /** Execution resource: at most one job per key runs at a time (see enqueueJob). */
  resource?: string;
  /**
   * Concurrency key of the step's job: at most `limit` jobs of the key LEASED at once (see enqueueJob's
   * `concurrency`). Default: the definition's (a step given by definition), its key computed from the payload.
   */
  concurrency?: { key: string; limit: number };
  /**
   * Rate limit of the step's job: each start takes a token of `key`'s bucket (see enqueueJob's `rateLimit`;
   * `burst` defaults to `limit`). Default: the definition's (a step given by definition), its key computed
   * from the payload.
   */
  rateLimit?: { key: string; limit: number; periodMs: number; burst?: number };
  /**
   * Fairness key of the step's job: claims take turns between a type's keys, `weight` (default 1) jobs of the
   * key per round (see enqueueJob's `fairness`). Default: the definition's (a step given by definition), its
   * key computed from the payload and the run's organization.
   */
  fairness?: { key: string; weight?: number };
  /**
   * Retry backoff of the step's job, over the definition's (a step given by definition; a field left out is
   * the definition's), else the default (see enqueueJob's `backoff`).
   */
  backoff?: { baseDelayMs?: number; maxDelayMs?: number };
  /** Stage label of the step's job until its handler sets another (see enqueueJob's `stage`). */
  stage?: string;
  /**
   * The step's job may return `continueNow` / `continueAfter`: the step stays ENQUEUED (its dependents
   * blocked) until a slice ends it. Without it a continuation fails the step
   * (`job.workflow_handler_continuation_not_enabled`).
   */
  allowContinuation?: boolean;
}

/**
 * Type-only mark on a built run: the type of its result step's output, so
 * `enqueueWorkflowRunHandle(db, run).getResult()` is typed. No such property
 * exists at run time.
 */
declare const RESULT: unique symbol;
export type TypedWorkflowRunInput<Result> = WorkflowRunInput & { readonly [RESULT]?: Result };

/** True for `string` and template patterns (`d${number}`), whose values the compiler cannot list. */
type IsPatternKey<K extends string> = {} extends Record<K, 1> ? true : false;

/**
 * A step key as `afterSuccess`/`afterTerminal` accept it: a literal the builder
 * has seen, or one it cannot judge (`string`, a pattern). An unknown literal
 * becomes a message type, so the compiler's error names the key.
 */
export type KnownStep<Steps, K extends string> = K extends string
  ? IsPatternKey<K> extends true
    ? K
    : K extends keyof Steps
      ? K
      : `no step '${K}' in this workflow (add it before naming it)`
  : never;

/**
 * `Steps` maps each step key to what its step stores as output: the
 * definition's output type for a step given by definition, `unknown` for one
 * given by job-type name or completed externally. `Result` is the result
 * step's output type once `resultStep` names it.
 */
export class WorkflowBuilder<Steps extends Record<string, unknown> = {}, Result = unknown> {
  private readonly steps: WorkflowStepInput[] = [];
  private readonly dependencies = new Map<string, WorkflowDependencyInput[]>();
  private readonly resultKeys: string[] = [];
  private organizationIdValue: string | null = null;
  private idempotencyKeyValue: string | undefined;
  /** A definition's computed fairness, by step index: computed in build(), once the run's organization is known. */
  private readonly deferredFairness = new Map<number, (organizationId: string | null) => { key: string; weight?: number }>();

  constructor(
    private readonly workflowType: string,
    private readonly metadata: { [key: string]: JsonValue } = {},
  ) {}

  /**
   * A step executed by a job of `definition` (payload checked by the
   * compiler; the definition's maxAttempts and timeout apply unless
   * `settings` say otherwise), or of the job type named `jobType` (payload
   * `unknown` to the compiler).
   */
  // The definition form last: a wrong payload's error then names the payload.
  job<K extends string>(key: K, jobType: string, payload: unknown, settings?: JobStepSettings): WorkflowBuilder<Steps & { [P in K]: unknown }, Result>;
  job<K extends string, D extends AnyJobDefinition>(
    key: K,
    definition: D,
    payload: JobPayload<D>,
    settings?: JobStepSettings,
  ): WorkflowBuilder<Steps & { [P in K]: JobOutput<D> }, Result>;
  job(key: string, job: string | AnyJobDefinition, payload: unknown, settings: JobStepSettings = {}): WorkflowBuilder<Record<string, unknown>, unknown> {
    if (isJobDefinition(job)) {
      // Named as enqueueWorkflowRun names the step (its index in build()'s steps).
      checkDefinitionPayloadSync(job, payload, ['steps', this.steps.length], 'workflow.invalid_input');
      const defaults = {
        ...(job.maxAttempts === undefined ? {} : { maxAttempts: job.maxAttempts }),
        ...(job.timeoutSeconds === undefined ? {} : { timeoutSeconds: job.timeoutSeconds }),
      };
      const own = withoutUndefined(settings);
      if (job.concurrency !== undefined && own.concurrency === undefined) {
        const { key: k, limit } = job.concurrency;
        own.concurrency = { key: typeof k === 'function' ? k(payload) : k, limit };
      }
      if (job.rateLimit !== undefined && own.rateLimit === undefined) {
        const { key: k, limit, periodMs, burst } = job.rateLimit;
        own.rateLimit = { key: typeof k === 'function' ? k(payload) : k, limit, periodMs, ...(burst === undefined ? {} : { burst }) };
      }
      if (job.fairness !== undefined && own.fairness === undefined) {
        const { key: k, weight } = job.fairness;
        const withWeight = (key: string) => ({ key, ...(weight === undefined ? {} : { weight }) });
        if (typeof k === 'function') this.deferredFairness.set(this.steps.length, (organizationId) => withWeight(k(payload, { organizationId })));
        else own.fairness = withWeight(k);
      }
      const backoff = own.backoff;
      if (typeof backoff === 'object' && backoff !== null) own.backoff = { ...job.backoff, ...withoutUndefined(backoff) };
      this.steps.push({ key, kind: 'job', jobType: job.jobType, payload, ...defaults, ...own });
    } else {
      this.steps.push({ key, kind: 'job', jobType: job, payload, ...settings });
    }
    return this as unknown as WorkflowBuilder<Record<string, unknown>, unknown>;
  }

  /** A step completed from outside (a human approval, a webhook) with `completeExternalWorkflowStep`. */
  external<K extends string>(key: K): WorkflowBuilder<Steps & { [P in K]: unknown }, Result> {
    this.steps.push({ key, kind: 'external' });
    return this as unknown as WorkflowBuilder<Steps & { [P in K]: unknown }, Result>;
  }

  /**
   * `step` runs only once every one of `prerequisites` SUCCEEDED; otherwise it is canceled.
   * A literal key must name a step this builder's type has seen (`afterSuccess('a', ['nope'])`
   * does not compile); a key typed `string` or a pattern (`step-${number}`) is checked by
   * `build()` and the enqueue, since the compiler cannot know it (e.g. steps added in a loop).
   */
  afterSuccess<const S extends string, const P extends string>(step: KnownStep<Steps, S>, prerequisites: readonly KnownStep<Steps, P>[]): this {
    return this.addDependencies(step, prerequisites, 'on_success');
  }

  /** `step` runs once every one of `prerequisites` is terminal, whatever the outcome (keys as for `afterSuccess`). */
  afterTerminal<const S extends string, const P extends string>(step: KnownStep<Steps, S>, prerequisites: readonly KnownStep<Steps, P>[]): this {
    return this.addDependencies(step, prerequisites, 'on_terminal');
  }

  /** The step whose output becomes the run's result when the run SUCCEEDED. */
  resultStep<K extends string>(key: K): WorkflowBuilder<Steps, K extends keyof Steps ? NonNullable<Steps[K]> : unknown> {
    this.resultKeys.push(key);
    return this as unknown as WorkflowBuilder<Steps, K extends keyof Steps ? NonNullable<Steps[K]> : unknown>;
  }

  organization(organizationId: string | null): this {
    this.organizationIdValue = organizationId;
    return this;
  }

  idempotencyKey(key: string): this {
    this.idempotencyKeyValue = key;
    return this;
  }

  /**
   * The plain-object input. Rules about the graph are checked by
   * `enqueueWorkflowRun`; what only the builder can get wrong (a dependency or
   * result declared for a step that was never added) is refused here.
   */
  build(): TypedWorkflowRunInput<Result> {
    const declared = new Set(this.steps.map((s) => s.key));
    for (const key of this.dependencies.keys()) {
      if (!declared.has(key)) throw new ValidationError('workflow.unknown_step', `steps.${key}`, `Dependencies were declared for unknown step "${key}".`);
    }
    for (const key of this.resultKeys) {
      if (!declared.has(key)) throw new ValidationError('workflow.unknown_step', `steps.${key}.result`, `Result step "${key}" was never added.`);
    }
    return {
      workflowType: this.workflowType,
      organizationId: this.organizationIdValue,
      metadata: this.metadata,
      ...(this.idempotencyKeyValue === undefined ? {} : { idempotencyKey: this.idempotencyKeyValue }),
      steps: this.steps.map((step, index) => ({
        ...step,
        ...this.deferredFairnessOf(index),
        dependsOn: this.dependencies.get(step.key) ?? [],
        result: this.resultKeys.includes(step.key),
      })),
    };
  }

  private deferredFairnessOf(index: number): { fairness?: { key: string; weight?: number } } {
    const compute = this.deferredFairness.get(index);
    return compute === undefined ? {} : { fairness: compute(this.organizationIdValue) };
  }

  private addDependencies(step: string, prerequisites: readonly string[], mode: 'on_success' | 'on_terminal'): this {
    if (!Array.isArray(prerequisites)) {
      throw new ValidationError('workflow.invalid_input', `steps.${String(step)}.dependsOn`, 'Expected an array of prerequisite step keys.');
    }
    const list = this.dependencies.get(step) ?? [];
    for (const prerequisite of prerequisites) list.push({ step: prerequisite, mode });
    this.dependencies.set(step, list);
    return this;
  }
}

export function workflow(workflowType: string, metadata: { [key: string]: JsonValue } = {}): WorkflowBuilder {
  return new WorkflowBuilder(workflowType, metadata);
}

function withoutUndefined<T extends object>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}
