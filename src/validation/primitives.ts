/** Shared zod building blocks for public inputs. */
import { z } from 'zod';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Why `value` is not plain JSON, or undefined when it is. */
export function jsonProblem(value: unknown, seen: Set<object> = new Set()): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : 'numbers must be finite';
  if (typeof value !== 'object') return `a ${typeof value} is not JSON`;
  if (seen.has(value)) return 'contains a cycle';
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (const item of value) {
        const problem = jsonProblem(item, seen);
        if (problem) return problem;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return 'only plain objects are JSON';
    for (const item of Object.values(value)) {
      const problem = item === undefined ? 'contains an undefined value' : jsonProblem(item, seen);
      if (problem) return problem;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

export const jsonValue = z.custom<JsonValue>((value) => jsonProblem(value) === undefined, {
  error: (issue) => `must be JSON-serialisable (${jsonProblem(issue.input) ?? 'invalid'})`,
});

export const jsonObject = z.custom<{ [key: string]: JsonValue }>(
  (value) => value !== null && typeof value === 'object' && !Array.isArray(value) && jsonProblem(value) === undefined,
  { error: 'must be a JSON object' },
);

export const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID');

export const nonBlank = (max = 200) =>
  z
    .string()
    .refine((s) => s.trim().length > 0, 'must not be blank')
    .refine((s) => s.length <= max, `must be at most ${max} characters`);

/** Idempotency and replay keys: non-blank, at most 512 bytes of UTF-8. */
export const requestKey = z
  .string()
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 512, 'must be at most 512 bytes (UTF-8)');

export const int32 = z.number().int('must be an integer').min(-2147483648).max(2147483647);
export const positiveInt = z.number().int('must be an integer').min(1, 'must be at least 1').max(2147483647);
