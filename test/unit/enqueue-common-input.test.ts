import { describe, expect, it } from 'vitest';
import { parseCommonJobInput } from '../../src/queue/common-job-input.js';
import { enqueueJobInputSchema } from '../../src/queue/inputs.js';

// The zod-free path for the common enqueue must accept exactly what the schema accepts with exactly its
// output, and hand everything else to the schema (undefined), which then names the field.
const NUL = String.fromCharCode(0);
const lone = String.fromCharCode(0xd800);
const hidden = Object.defineProperty({ jobType: 'a', payload: {} }, 'runAt', { value: new Date(Number.NaN), enumerable: false });
const inputs: [string, unknown][] = [
  ['plain', { jobType: 'email.send', payload: { to: 'a@b.c' } }],
  ['payload null', { jobType: 'a', payload: null }],
  ['payload array', { jobType: 'a', payload: [1, 'x', { y: true }] }],
  ['payload scalar', { jobType: 'a', payload: 3.5 }],
  ['all common fields', { jobType: 'a', payload: {}, organizationId: 'org-1', priority: -5, idempotencyKey: 'k' }],
  ['priority at the bounds', { jobType: 'a', payload: {}, priority: 2147483647 }],
  ['payload missing', { jobType: 'a' }],
  ['payload undefined', { jobType: 'a', payload: undefined }],
  ['payload NaN', { jobType: 'a', payload: { n: Number.NaN } }],
  ['payload NUL', { jobType: 'a', payload: { s: NUL } }],
  ['payload key with a lone surrogate', { jobType: 'a', payload: { [lone]: 1 } }],
  ['payload Date', { jobType: 'a', payload: new Date() }],
  ['jobType blank', { jobType: '  ', payload: {} }],
  ['jobType too long', { jobType: 'x'.repeat(201), payload: {} }],
  ['jobType 200', { jobType: 'x'.repeat(200), payload: {} }],
  ['jobType NUL', { jobType: `a${NUL}`, payload: {} }],
  ['jobType number', { jobType: 1, payload: {} }],
  ['organizationId blank', { jobType: 'a', payload: {}, organizationId: ' ' }],
  ['organizationId empty', { jobType: 'a', payload: {}, organizationId: '' }],
  ['organizationId 256', { jobType: 'a', payload: {}, organizationId: 'o'.repeat(256) }],
  ['organizationId null', { jobType: 'a', payload: {}, organizationId: null }],
  ['organizationId undefined', { jobType: 'a', payload: {}, organizationId: undefined }],
  ['priority fractional', { jobType: 'a', payload: {}, priority: 1.5 }],
  ['priority out of int32', { jobType: 'a', payload: {}, priority: 2147483648 }],
  ['priority Infinity', { jobType: 'a', payload: {}, priority: Number.POSITIVE_INFINITY }],
  ['priority string', { jobType: 'a', payload: {}, priority: '1' }],
  ['idempotencyKey blank', { jobType: 'a', payload: {}, idempotencyKey: '\t' }],
  ['idempotencyKey 513 bytes', { jobType: 'a', payload: {}, idempotencyKey: `${'é'.repeat(256)}x` }],
  ['idempotencyKey 512 bytes', { jobType: 'a', payload: {}, idempotencyKey: 'é'.repeat(256) }],
  ['debounce', { jobType: 'a', payload: {}, debounce: { key: 'k', windowMs: 1000 } }],
  ['debounce with maxWaitMs', { jobType: 'a', payload: {}, organizationId: 'o', debounce: { key: 'k', windowMs: 1000, maxWaitMs: 5000 } }],
  ['debounce windowMs 0', { jobType: 'a', payload: {}, debounce: { key: 'k', windowMs: 0 } }],
  ['debounce with an idempotencyKey', { jobType: 'a', payload: {}, idempotencyKey: 'i', debounce: { key: 'k', windowMs: 1000 } }],
  ['throttle', { jobType: 'a', payload: {}, priority: 1, throttle: { key: 'k', windowMs: 1000 } }],
  ['throttle blank key', { jobType: 'a', payload: {}, throttle: { key: ' ', windowMs: 1000 } }],
  ['debounce undefined', { jobType: 'a', payload: {}, debounce: undefined }],
  ['unknown field', { jobType: 'a', payload: {}, priorty: 1 }],
  ['another known field', { jobType: 'a', payload: {}, maxAttempts: 3 }],
  ['a non-enumerable field', hidden],
  ['not a plain object', Object.assign(Object.create({ inherited: 1 }), { jobType: 'a', payload: {} })],
  ['null', null],
  ['an array', ['a']],
];

describe('the common enqueue input without zod', () => {
  it.each(inputs)('%s: the schema decides it the same way', (_name, input) => {
    const fast = parseCommonJobInput(input);
    const schema = enqueueJobInputSchema.safeParse(input);
    // Taken: the schema accepts it, with the same output (a refusal leaves schema.data undefined). Not taken: left to the schema.
    expect(fast).toEqual(fast === undefined ? undefined : schema.data);
    expect(fast?.payload).toBe(fast === undefined ? undefined : (input as { payload: unknown }).payload);
  });

  it('takes the common shapes itself', () => {
    const taken = inputs.filter(([, input]) => parseCommonJobInput(input) !== undefined).map(([name]) => name);
    expect(taken).toEqual([
      'plain',
      'payload null',
      'payload array',
      'payload scalar',
      'all common fields',
      'priority at the bounds',
      'jobType 200',
      'idempotencyKey 512 bytes',
    ]);
  });
});
