/** inCallOrder (src/workflow/function-order.ts): FUNCTION steps sorted by call index in their own places, others untouched. */
import { describe, expect, it } from 'vitest';
import { inCallOrder } from '../../src/workflow/function-order.js';

const step = (key: string, kind: 'JOB' | 'EXTERNAL' | 'FUNCTION', callIndex: number | null = null) => ({ key, executionKind: kind, callIndex });

describe('inCallOrder', () => {
  it('orders FUNCTION steps by call index and leaves the body step first', () => {
    const listed = [step('$function', 'JOB'), step('y', 'FUNCTION', 1), step('x', 'FUNCTION', 0), step('z', 'FUNCTION', 2)];
    expect(inCallOrder(listed).map((s) => s.key)).toEqual(['$function', 'x', 'y', 'z']);
  });

  it('keeps a DAG as listed and returns a copy', () => {
    const listed = [step('b', 'JOB'), step('a', 'EXTERNAL')];
    const ordered = inCallOrder(listed);
    expect(ordered.map((s) => s.key)).toEqual(['b', 'a']);
    expect(ordered).not.toBe(listed);
  });
});
