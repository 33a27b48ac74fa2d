import { describe, expect, it } from 'vitest';
import { validate, version } from 'uuid';
import { newId, newIds } from '../../src/db/ids.js';

describe('newId / newIds', () => {
  it('makes valid, distinct UUIDv7 ids that sort in the order they were made', () => {
    const ids = [...newIds(5_000), newId(), ...newIds(3)];
    for (const id of ids) {
      expect(validate(id)).toBe(true);
      expect(version(id)).toBe(7);
      expect(id[19]).toMatch(/[89ab]/); // RFC 9562 variant
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries the current Unix milliseconds in its first 48 bits', () => {
    const before = Date.now();
    const id = newId();
    const ms = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    // Equal to the clock, or a little ahead after many ids in one millisecond.
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1_000);
  });
});
