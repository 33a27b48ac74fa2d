import { describe, expect, it } from 'vitest';
import { toStorableJson } from '../../src/validation/jsonified.js';

describe('toStorableJson', () => {
  it('returns plain JSON unchanged, the same object (no copy on the common path)', () => {
    const value = { a: [1, 'two', null, { b: true }] };
    const result = toStorableJson(value);
    expect(result.ok && result.value).toBe(value);
  });

  it('normalises like JSON.stringify: dates to ISO strings, toJSON honoured, undefined dropped, non-finite to null', () => {
    const value = {
      at: new Date('2026-12-01T00:00:00.000Z'),
      amount: { toJSON: () => '10.00' },
      gone: undefined,
      fn: () => 1,
      list: [undefined, Number.NaN, Number.POSITIVE_INFINITY, 2],
      nested: { when: new Date(0) },
    };
    expect(toStorableJson(value)).toEqual({
      ok: true,
      value: { at: '2026-12-01T00:00:00.000Z', amount: '10.00', list: [null, null, null, 2], nested: { when: '1970-01-01T00:00:00.000Z' } },
    });
  });

  it('treats a top-level undefined or function as no output', () => {
    expect(toStorableJson(undefined)).toEqual({ ok: true, value: undefined });
    expect(toStorableJson(() => 1)).toEqual({ ok: true, value: undefined });
  });

  it('still refuses what JSON cannot hold: a cycle, a BigInt, a lone surrogate (even inside a normalised value)', () => {
    const cyclic: Record<string, unknown> = { at: new Date() };
    cyclic.self = cyclic;
    expect(toStorableJson(cyclic)).toMatchObject({ ok: false, problem: { reason: 'contains a cycle' } });
    expect(toStorableJson({ n: 10n })).toMatchObject({ ok: false, problem: { path: ['n'], reason: 'a bigint is not JSON' } });
    expect(toStorableJson({ at: new Date(), n: 10n })).toMatchObject({ ok: false, problem: { reason: 'a bigint is not JSON' } });
    expect(toStorableJson({ at: new Date(), name: 'a\uD800b' })).toMatchObject({
      ok: false,
      problem: { path: ['name'], reason: expect.stringContaining('lone surrogate') },
    });
  });

  it('refuses a value too deep for JSON.stringify itself without throwing', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i += 1) deep = { a: deep };
    expect(toStorableJson({ at: new Date(0), deep })).toMatchObject({ ok: false, problem: { reason: expect.stringContaining('nested deeper') } });
  });

  it('refuses a value nested deeper than the storable limit after normalisation', () => {
    let deep: unknown = new Date(0);
    for (let i = 0; i < 300; i += 1) deep = { d: deep };
    expect(toStorableJson(deep)).toMatchObject({ ok: false, problem: { reason: expect.stringContaining('nested deeper') } });
  });
});
