/**
 * The chaos run's "never more than N leases of a key at once" check (test/harness/concurrency-ledger.ts) over hand-made
 * intervals: it must see an overlap where there is one, so a clean chaos run means something.
 */
import { describe, expect, it } from 'vitest';
import { maxOverlapByKey, type KeyInterval } from '../harness/concurrency-ledger.js';

const iv = (key: string, id: string, start: number, end: number | null): KeyInterval => ({
  key,
  id,
  start: BigInt(start),
  end: end === null ? null : BigInt(end),
});

describe('maxOverlapByKey', () => {
  it('counts back-to-back intervals of a key one at a time', () => {
    const result = maxOverlapByKey([iv('k', 'a', 1, 5), iv('k', 'b', 6, 9), iv('k', 'c', 10, 12)]);
    expect(result.get('k')).toMatchObject({ max: 1 });
  });

  it('finds the point where three intervals hold, and names them', () => {
    const result = maxOverlapByKey([iv('k', 'a', 1, 10), iv('k', 'b', 2, 4), iv('k', 'c', 3, 8), iv('k', 'd', 9, 11)]);
    expect(result.get('k')).toEqual({ key: 'k', max: 3, at: 3n, holders: ['a', 'b', 'c'] });
  });

  it('treats intervals as closed: one starting where another ends overlaps it', () => {
    expect(maxOverlapByKey([iv('k', 'a', 1, 5), iv('k', 'b', 5, 7)]).get('k')?.max).toBe(2);
  });

  it('keeps keys apart', () => {
    const result = maxOverlapByKey([iv('x', 'a', 1, 10), iv('y', 'b', 2, 9), iv('x', 'c', 11, 12)]);
    expect(result.get('x')?.max).toBe(1);
    expect(result.get('y')?.max).toBe(1);
  });

  it('holds an open interval to the end', () => {
    const result = maxOverlapByKey([iv('k', 'open', 1, null), iv('k', 'b', 100, 101), iv('k', 'c', 1_000, 1_001)]);
    expect(result.get('k')).toMatchObject({ max: 2, holders: ['open', 'b'] });
  });

  it('does not depend on the order it is given, and refuses an interval ending before its start', () => {
    const intervals = [iv('k', 'a', 5, 20), iv('k', 'b', 1, 6), iv('k', 'c', 15, 30), iv('k', 'd', 7, 14), iv('k', 'e', 16, 17)];
    expect(maxOverlapByKey(intervals).get('k')?.max).toBe(3);
    expect(maxOverlapByKey([...intervals].reverse()).get('k')?.max).toBe(3);
    expect(() => maxOverlapByKey([iv('k', 'bad', 5, 4)])).toThrow(/ends/);
  });
});
