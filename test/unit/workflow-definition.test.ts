import { describe, expect, it } from 'vitest';
import { ValidationError, workflow, type WorkflowRunInput } from '../../src/index.js';
import { validateWorkflowRun } from '../../src/workflow/run-definition.js';

function failure(input: unknown): ValidationError {
  try {
    validateWorkflowRun(input);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('expected a validation error');
}

const job = (key: string, dependsOn: { step: string; mode?: 'on_success' | 'on_terminal' }[] = []) => ({
  key,
  kind: 'job' as const,
  jobType: 'x.run',
  payload: {},
  dependsOn,
});

describe('workflow definition', () => {
  it('orders steps topologically and resolves job defaults', () => {
    const run = validateWorkflowRun(
      workflow('wf')
        .job('d', 'x.d', {})
        .job('b', 'x.b', {}, { priority: 3 })
        .job('a', 'x.a', {})
        .afterSuccess('b', ['a'])
        .afterTerminal('d', ['b'])
        .resultStep('d')
        .build(),
    );
    expect(run.steps.map((s) => s.key)).toEqual(['a', 'b', 'd']);
    expect(run.resultStepKey).toBe('d');
    expect(run.steps[1]).toMatchObject({ key: 'b', priority: 3, maxAttempts: 5, timeoutSeconds: 300, dependsOn: [{ step: 'a', mode: 'ON_SUCCESS' }] });
    expect(run.steps[2]!.dependsOn).toEqual([{ step: 'b', mode: 'ON_TERMINAL' }]);
  });

  it.each<[string, WorkflowRunInput | unknown, string, string]>([
    ['a blank key', { workflowType: 'wf', steps: [job(' ')] }, 'workflow.blank_step_key', 'steps.0.key'],
    ['a duplicate key', { workflowType: 'wf', steps: [job('a'), job('a')] }, 'workflow.duplicate_step_key', 'steps.1.key'],
    ['an unknown prerequisite', { workflowType: 'wf', steps: [job('a', [{ step: 'zz' }])] }, 'workflow.unknown_prerequisite', 'steps.0.dependsOn.0.step'],
    ['a self-dependency', { workflowType: 'wf', steps: [job('a', [{ step: 'a' }])] }, 'workflow.self_dependency', 'steps.0.dependsOn.0.step'],
    [
      'a duplicate edge',
      { workflowType: 'wf', steps: [job('a'), job('b', [{ step: 'a' }, { step: 'a', mode: 'on_terminal' }])] },
      'workflow.duplicate_dependency',
      'steps.1.dependsOn.1.step',
    ],
    [
      'two result steps',
      {
        workflowType: 'wf',
        steps: [
          { ...job('a'), result: true },
          { ...job('b'), result: true },
        ],
      },
      'workflow.multiple_result_steps',
      'steps.1.result',
    ],
    [
      'an external step with job settings',
      { workflowType: 'wf', steps: [{ key: 'e', kind: 'external', priority: 1 }] },
      'workflow.external_step_job_settings',
      'steps.0.priority',
    ],
    [
      'an external step with a concurrency key',
      { workflowType: 'wf', steps: [{ key: 'e', kind: 'external', concurrency: { key: 'k', limit: 2 } }] },
      'workflow.external_step_job_settings',
      'steps.0.concurrency',
    ],
    [
      'an external step with a rate limit',
      { workflowType: 'wf', steps: [{ key: 'e', kind: 'external', rateLimit: { key: 'k', limit: 2, periodMs: 1000 } }] },
      'workflow.external_step_job_settings',
      'steps.0.rateLimit',
    ],
    [
      'an external step with a fairness key',
      { workflowType: 'wf', steps: [{ key: 'e', kind: 'external', fairness: { key: 'k' } }] },
      'workflow.external_step_job_settings',
      'steps.0.fairness',
    ],
    ['no steps', { workflowType: 'wf', steps: [] }, 'workflow.invalid_input', 'steps'],
    ['a blank workflow type', { workflowType: '', steps: [job('a')] }, 'workflow.invalid_input', 'workflowType'],
    ['a payload that is not JSON', { workflowType: 'wf', steps: [{ ...job('a'), payload: { n: 1n } }] }, 'workflow.invalid_input', 'steps.0.payload.n'],
  ])('rejects %s, naming the field', (_name, input, code, field) => {
    const error = failure(input);
    expect(error.code).toBe(code);
    expect(error.field).toBe(field);
  });

  it('names the cycle', () => {
    const error = failure({
      workflowType: 'wf',
      steps: [job('root'), job('a', [{ step: 'root' }, { step: 'c' }]), job('b', [{ step: 'a' }]), job('c', [{ step: 'b' }])],
    });
    expect(error.code).toBe('workflow.cycle');
    expect(error.message).toMatch(/a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c/);
    expect(error.details.cycle).toHaveLength(4);
  });

  it('refuses, in the builder, dependencies or a result for a step never added', () => {
    // A JavaScript caller, or a key the compiler cannot judge: refused at build().
    const ghost: string = 'ghost';
    expect(() => workflow('wf').job('a', 'x', {}).afterSuccess(ghost, ['a']).build()).toThrow(/unknown step "ghost"/);
    expect(() => workflow('wf').job('a', 'x', {}).resultStep('ghost').build()).toThrow(/never added/);
  });
});
