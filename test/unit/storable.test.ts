/** The storable check: what PostgreSQL can store exactly, decided without it. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/runledger-error.js';
import { parseInput } from '../../src/validation/parse.js';
import { jsonValue, nonBlank } from '../../src/validation/primitives.js';
import { findJsonProblem, MAX_JSON_DEPTH, textProblem, toStorableText, truncateText } from '../../src/validation/storable.js';
import { z } from 'zod';

/** A value nested `depth` levels deep: `{ a: { a: ... 1 } }` or `[[...1]]`. */
function nested(depth: number, kind: 'object' | 'array' = 'object'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = kind === 'object' ? { a: value } : [value];
  return value;
}

function validationErrorOf(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

const payloadSchema = z.strictObject({ jobType: nonBlank(200), payload: jsonValue });

describe('storable text', () => {
  it('refuses NUL and lone surrogates, accepts paired surrogates', () => {
    expect(textProblem('plain é 😀')).toBeUndefined();
    expect(textProblem('a\u0000b')).toMatch(/NUL/);
    expect(textProblem('a\uD83D')).toMatch(/lone surrogate \(U\+D83D at index 1\)/);
    expect(textProblem('\uDE00b')).toMatch(/lone surrogate \(U\+DE00 at index 0\)/);
    expect(textProblem('\uDE00\uD83D')).toMatch(/U\+DE00/);
  });

  it('agrees with what UTF-8 encoding keeps exactly, for any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const roundTrips = Buffer.from(text, 'utf8').toString('utf8') === text && !text.includes('\u0000');
        expect(textProblem(text) === undefined).toBe(roundTrips);
      }),
      { numRuns: 2_000 },
    );
  });

  it('sanitises any string into storable text, cut without splitting a pair', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.integer({ min: 1, max: 40 }), (text, max) => {
        const storable = toStorableText(text, max);
        expect(textProblem(storable)).toBeUndefined();
        expect(storable.length).toBeLessThanOrEqual(max);
      }),
    );
    expect(toStorableText('a\u0000b\uD83Dc')).toBe('a\uFFFDb\uFFFDc');
    expect(truncateText('ab😀', 3)).toBe('ab');
    expect(truncateText('ab😀', 4)).toBe('ab😀');
  });
});

describe('storable JSON', () => {
  it('names where a value cannot be stored', () => {
    expect(findJsonProblem({ a: [1, { b: 'x\u0000' }] })).toEqual({ path: ['a', 1, 'b'], reason: expect.stringMatching(/NUL/) });
    expect(findJsonProblem({ a: { 'k\u0000': 1 } })).toEqual({ path: ['a', 'k\u0000'], reason: expect.stringMatching(/^has a key that contains NUL/) });
    expect(findJsonProblem({ a: '\uD800' })?.reason).toMatch(/lone surrogate/);
    expect(findJsonProblem({ n: Number.POSITIVE_INFINITY })).toEqual({ path: ['n'], reason: 'numbers must be finite' });
  });

  it(`allows ${MAX_JSON_DEPTH} levels of nesting and refuses one more`, () => {
    expect(findJsonProblem(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(findJsonProblem(nested(MAX_JSON_DEPTH, 'array'))).toBeUndefined();
    expect(findJsonProblem(nested(MAX_JSON_DEPTH + 1))?.reason).toBe(`is nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it('refuses 5,000- and 100,000-level values with a coded error, never a RangeError', () => {
    for (const depth of [5_000, 100_000]) {
      for (const kind of ['object', 'array'] as const) {
        const error = validationErrorOf(() => parseInput(payloadSchema, { jobType: 'x', payload: nested(depth, kind) }, 'job.invalid_input'));
        expect(error.code).toBe('job.invalid_input');
        expect(error.field.startsWith(kind === 'object' ? 'payload.a.a.a' : 'payload.0.0.0')).toBe(true);
        expect(error.message).toMatch(/nested deeper than/);
      }
    }
  });

  it('tells a cycle from a shared (acyclic) reference', () => {
    const shared = { x: 1 };
    expect(findJsonProblem({ a: shared, b: [shared, shared] })).toBeUndefined();
    const cyclic: Record<string, unknown> = { list: [] };
    (cyclic.list as unknown[]).push({ back: cyclic });
    expect(findJsonProblem(cyclic)).toEqual({ path: ['list', 0, 'back'], reason: 'contains a cycle' });
  });

  it('names the field of every rejected class with a printable path', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ a: { b: 'x\u0000y' } }, 'payload.a.b', /contains NUL/],
      [{ a: ['ok', '\uDC00'] }, 'payload.a.1', /lone surrogate/],
      [{ 'bad\u0000key': 1 }, 'payload.bad\uFFFDkey', /key that contains NUL/],
      [{ n: Number.NaN }, 'payload.n', /finite/],
    ];
    for (const [payload, field, message] of cases) {
      const error = validationErrorOf(() => parseInput(payloadSchema, { jobType: 'x', payload }, 'job.invalid_input'));
      expect(error).toMatchObject({ code: 'job.invalid_input', field });
      expect(error.message).toMatch(message);
      expect(textProblem(error.field)).toBeUndefined();
      expect(textProblem(error.message)).toBeUndefined();
    }
    const jobType = validationErrorOf(() => parseInput(payloadSchema, { jobType: 'a\u0000', payload: {} }, 'job.invalid_input'));
    expect(jobType).toMatchObject({ code: 'job.invalid_input', field: 'jobType' });
  });

  it('accepts exactly the JSON whose every string is storable', () => {
    fc.assert(
      fc.property(fc.jsonValue({ depthSize: 'small', stringUnit: 'binary' }), (value) => {
        const strings: string[] = [];
        JSON.stringify(value, (key, member: unknown) => {
          strings.push(key);
          if (typeof member === 'string') strings.push(member);
          return member;
        });
        const storable = strings.every((s) => textProblem(s) === undefined);
        expect(findJsonProblem(value) === undefined).toBe(storable);
      }),
      { numRuns: 1_000 },
    );
  });
});
