/**
 * A typed builder for workflow runs; `build()` yields the plain-object input
 * that `enqueueWorkflowRun` validates (the builder adds convenience, not rules).
 *
 * @example
 * const run = workflow('profiles.refresh', { requestedBy: 'u1' })
 *   .job('crawl', 'profiles.crawl', { url })
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
import type { JsonValue } from '../validation/primitives.js';
import type { WorkflowDependencyInput, WorkflowRunInput, WorkflowStepInput } from './definition.js';

export interface JobStepSettings {
  priority?: number;
  maxAttempts?: number;
  timeoutSeconds?: number;
  /** Execution resource: at most one job per key runs at a time (see enqueueJob). */
  resource?: string;
}

export class WorkflowBuilder {
  private readonly steps: WorkflowStepInput[] = [];
  private readonly dependencies = new Map<string, WorkflowDependencyInput[]>();
  private readonly resultKeys: string[] = [];
  private organizationIdValue: string | null = null;
  private idempotencyKeyValue: string | undefined;

  constructor(
    private readonly workflowType: string,
    private readonly metadata: { [key: string]: JsonValue } = {},
  ) {}

  /** A step executed by a job of `jobType` with `payload`. */
  job(key: string, jobType: string, payload: JsonValue, settings: JobStepSettings = {}): this {
    this.steps.push({ key, kind: 'job', jobType, payload, ...settings });
    return this;
  }

  /** A step completed from outside (a human approval, a webhook) with `completeExternalWorkflowStep`. */
  external(key: string): this {
    this.steps.push({ key, kind: 'external' });
    return this;
  }

  /** `step` runs only once every one of `prerequisites` SUCCEEDED; otherwise it is canceled. */
  afterSuccess(step: string, prerequisites: readonly string[]): this {
    return this.addDependencies(step, prerequisites, 'on_success');
  }

  /** `step` runs once every one of `prerequisites` is terminal, whatever the outcome. */
  afterTerminal(step: string, prerequisites: readonly string[]): this {
    return this.addDependencies(step, prerequisites, 'on_terminal');
  }

  /** The step whose output becomes the run's result when the run SUCCEEDED. */
  resultStep(key: string): this {
    this.resultKeys.push(key);
    return this;
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
  build(): WorkflowRunInput {
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
      steps: this.steps.map((step) => ({
        ...step,
        dependsOn: this.dependencies.get(step.key) ?? [],
        result: this.resultKeys.includes(step.key),
      })),
    };
  }

  private addDependencies(step: string, prerequisites: readonly string[], mode: 'on_success' | 'on_terminal'): this {
    const list = this.dependencies.get(step) ?? [];
    for (const prerequisite of prerequisites) list.push({ step: prerequisite, mode });
    this.dependencies.set(step, list);
    return this;
  }
}

export function workflow(workflowType: string, metadata: { [key: string]: JsonValue } = {}): WorkflowBuilder {
  return new WorkflowBuilder(workflowType, metadata);
}
