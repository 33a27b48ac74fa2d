import { describe, expect, it } from 'vitest';
import { workflow } from '../../src/index.js';
import { parseCommonWorkflowRun } from '../../src/workflow/common-run-input.js';
import { workflowRunInputSchema } from '../../src/workflow/run-definition.js';

// The zod-free path for the common workflow run must accept exactly what the schema accepts with exactly
// its output, and hand everything else to the schema (undefined), which then names the field.
const NUL = String.fromCharCode(0);
const chain = workflow('probe.chain', { n: 1 })
  .job('a', 'probe.a', { n: 1 })
  .job('b', 'probe.b', { n: 1 }, { priority: 3, maxAttempts: 2, timeoutSeconds: 30 })
  .afterSuccess('b', ['a'])
  .external('approve')
  .afterTerminal('approve', ['b'])
  .job('c', 'probe.c', null)
  .afterSuccess('c', ['approve'])
  .resultStep('c')
  .organization('org-1')
  .idempotencyKey('k-1')
  .build();
const job = (extra: Record<string, unknown>) => ({ key: 'a', kind: 'job', jobType: 't', payload: {}, ...extra });
const run = (extra: Record<string, unknown>, steps: unknown = [job({})]) => ({ workflowType: 'w', steps, ...extra });
const inputs: [string, unknown][] = [
  ['a built chain with every common field', chain],
  ['a built run without options', workflow('w').job('a', 't', {}).build()],
  ['minimal', run({})],
  ['organizationId null', run({ organizationId: null })],
  ['metadata', run({ metadata: { a: [1, { b: 'c' }] } })],
  ['dependsOn with and without mode', run({}, [job({}), job({ key: 'b', dependsOn: [{ step: 'a' }, { step: 'x', mode: 'on_terminal' }] })])],
  ['allowContinuation', run({}, [job({ allowContinuation: true })])],
  ['an external step', run({}, [{ key: 'e', kind: 'external' }])],
  ['a blank step key (the DAG check refuses it after)', run({}, [job({ key: ' ' })])],
  ['no steps', run({}, [])],
  ['steps not an array', run({}, { 0: job({}) })],
  ['a sparse steps array', run({}, Object.assign([job({})], { 2: job({ key: 'b' }) }))],
  ['workflowType blank', { workflowType: ' ', steps: [job({})] }],
  ['workflowType 201', { workflowType: 'w'.repeat(201), steps: [job({})] }],
  ['organizationId empty', run({ organizationId: '' })],
  ['organizationId undefined', run({ organizationId: undefined })],
  ['metadata an array', run({ metadata: [] })],
  ['metadata null', run({ metadata: null })],
  ['metadata with NaN', run({ metadata: { n: Number.NaN } })],
  ['idempotencyKey blank', run({ idempotencyKey: '' })],
  ['idempotencyKey 513 bytes', run({ idempotencyKey: 'k'.repeat(513) })],
  ['an unknown run field', run({ priority: 1 })],
  ['an unknown step kind', run({}, [{ key: 'a', kind: 'timer' }])],
  ['an external step with a payload', run({}, [{ key: 'e', kind: 'external', payload: {} }])],
  ['a step with a resource', run({}, [job({ resource: 'r' })])],
  ['a step with a stage', run({}, [job({ stage: 's' })])],
  ['a step with a backoff', run({}, [job({ backoff: { baseDelayMs: 10 } })])],
  ['payload missing', run({}, [{ key: 'a', kind: 'job', jobType: 't' }])],
  ['payload with NUL', run({}, [job({ payload: { s: NUL } })])],
  ['jobType 201', run({}, [job({ jobType: 't'.repeat(201) })])],
  ['step key with NUL', run({}, [job({ key: NUL })])],
  ['priority fractional', run({}, [job({ priority: 0.5 })])],
  ['maxAttempts 0', run({}, [job({ maxAttempts: 0 })])],
  ['timeoutSeconds 2^31', run({}, [job({ timeoutSeconds: 2147483648 })])],
  ['allowContinuation a string', run({}, [job({ allowContinuation: 'yes' })])],
  ['result a string', run({}, [job({ result: 'true' })])],
  ['dependsOn not an array', run({}, [job({ dependsOn: 'b' })])],
  ['a dependency mode unknown', run({}, [job({ dependsOn: [{ step: 'b', mode: 'always' }] })])],
  ['a dependency step 201', run({}, [job({ dependsOn: [{ step: 's'.repeat(201) }] })])],
  ['a dependency with another field', run({}, [job({ dependsOn: [{ step: 'b', when: 1 }] })])],
  ['a non-enumerable step field', run({}, [Object.defineProperty(job({}), 'stage', { value: ' ', enumerable: false })])],
  ['null', null],
];

describe('the common workflow run without zod', () => {
  it.each(inputs)('%s: the schema decides it the same way', (_name, input) => {
    const fast = parseCommonWorkflowRun(input);
    const schema = workflowRunInputSchema.safeParse(input);
    // Taken: the schema accepts it, with the same output (a refusal leaves schema.data undefined). Not taken: left to the schema.
    expect(fast).toEqual(fast === undefined ? undefined : schema.data);
  });

  it('takes the common shapes itself', () => {
    const taken = inputs.filter(([, input]) => parseCommonWorkflowRun(input) !== undefined).map(([name]) => name);
    expect(taken).toEqual([
      'a built chain with every common field',
      'a built run without options',
      'minimal',
      'organizationId null',
      'metadata',
      'dependsOn with and without mode',
      'allowContinuation',
      'an external step',
      'a blank step key (the DAG check refuses it after)',
    ]);
  });
});
