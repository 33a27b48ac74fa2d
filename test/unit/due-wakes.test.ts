import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DueWakes } from '../../src/worker/due-wakes.js';

describe('DueWakes', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls back once per moment wakes fall due, earliest first, never before a wake is due', () => {
    const fired: number[] = [];
    const start = Date.now();
    const wakes = new DueWakes(() => fired.push(Date.now() - start));
    for (const delay of [500, 100, 300, 100, 2_000]) wakes.after(delay);
    expect(wakes.size).toBe(5);
    vi.advanceTimersByTime(100);
    expect(fired).toEqual([]); // due at 101: one past the delay
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([101]); // both 100 ms wakes, one call
    vi.advanceTimersByTime(2_000);
    expect(fired).toEqual([101, 301, 501, 2_001]);
    expect(wakes.size).toBe(0);
  });

  it('refuses negative or non-finite delays and forgets everything when closed', () => {
    const onDue = vi.fn();
    const wakes = new DueWakes(onDue);
    wakes.after(-1);
    wakes.after(Number.NaN);
    expect(wakes.size).toBe(0);
    wakes.after(50);
    wakes.close();
    wakes.after(10);
    vi.advanceTimersByTime(1_000);
    expect(onDue).not.toHaveBeenCalled();
    expect(wakes.size).toBe(0);
  });
});
