/**
 * What a job's output becomes when it is stored: the value `JSON.stringify`
 * would write, read back. A handler may return anything its own code
 * naturally produces (a Prisma row with `Date`s, a `Decimal`, optional fields
 * left `undefined`); by the time it returns, its side effects have happened,
 * so refusing the value would throw finished work away. Instead it is
 * normalised the way JSON.stringify does it and `Jsonified<T>` types the
 * result, so the compiler shows the reader what is really stored (a `Date`
 * field reads back as a `string`).
 *
 * Normalisation only runs when the fast check (storable.ts) finds the value
 * is not already plain JSON, so plain outputs cost nothing extra. What JSON
 * itself cannot hold still fails, with `job.output_invalid`: a cycle, a
 * BigInt, a lone surrogate, nesting beyond MAX_JSON_DEPTH.
 */
import { findJsonProblem, MAX_JSON_DEPTH, type JsonProblem } from './storable.js';

type Primitive = string | number | boolean | null;
/** Members JSON.stringify leaves out of objects (and writes as null in arrays). */
type Dropped = undefined | symbol | ((...args: never[]) => unknown);

/** The type of `JSON.parse(JSON.stringify(value))` for a `value` of type `T`. */
export type Jsonified<T> = T extends { toJSON(...args: never[]): infer R }
  ? Jsonified<R>
  : T extends Primitive
    ? T
    : T extends Dropped
      ? never
      : T extends bigint
        ? never
        : T extends readonly unknown[]
          ? JsonifiedArray<T>
          : T extends object
            ? JsonifiedObject<T>
            : never;

type JsonifiedArray<T extends readonly unknown[]> = { -readonly [K in keyof T]: T[K] extends Dropped ? null : Jsonified<T[K]> };

/** Keys whose value may be undefined (or a function) are absent after the round trip: optional. */
type MaybeDroppedKeys<T> = { [K in keyof T]-?: Extract<T[K], Dropped> extends never ? never : K }[keyof T];
type StringKeys<T> = Extract<keyof T, string>;

type JsonifiedObject<T> = Simplify<
  { [K in Exclude<StringKeys<T>, MaybeDroppedKeys<T>>]: Jsonified<T[K]> } & {
    [K in Extract<StringKeys<T>, MaybeDroppedKeys<T>> as Exclude<T[K], Dropped> extends never ? never : K]?: Jsonified<Exclude<T[K], Dropped>>;
  }
>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/**
 * `value` as it will be stored: unchanged when it is already storable JSON,
 * else normalised like JSON.stringify (dates to ISO strings, `toJSON`
 * honoured, undefined members dropped, non-finite numbers to null). Returns
 * the problem when even the normalised value cannot be stored.
 */
export function toStorableJson(value: unknown): { ok: true; value: unknown } | { ok: false; problem: JsonProblem } {
  const problem = findJsonProblem(value);
  if (!problem) return { ok: true, value };
  // NUL, a lone surrogate, a cycle, too deep, a BigInt: JSON.stringify would not make it storable.
  if (!NORMALISABLE.some((pattern) => pattern.test(problem.reason))) return { ok: false, problem };
  let normalised: unknown;
  try {
    const text = JSON.stringify(value);
    // undefined: the value itself is dropped by JSON (a function, a symbol): nothing to store.
    normalised = text === undefined ? undefined : JSON.parse(text);
  } catch (error) {
    // A cycle or a BigInt (or a toJSON that threw): JSON cannot write it. The fast check's problem may be a
    // member normalisation would have fixed (a Date before the cycle), so the reason comes from the throw.
    const reason = stringifyFailure(error);
    return { ok: false, problem: problem.reason === reason ? problem : { path: [], reason } };
  }
  if (normalised === undefined) return { ok: true, value: undefined };
  const remaining = findJsonProblem(normalised);
  return remaining ? { ok: false, problem: remaining } : { ok: true, value: normalised };
}

/** The problems (reasons of storable.ts) that JSON.stringify resolves: it writes or drops such members. */
const NORMALISABLE = [/^only plain objects are JSON$/, /^undefined is not JSON$/, /^a (function|symbol) is not JSON$/, /^numbers must be finite$/];

function stringifyFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  if (/circular/i.test(message)) return 'contains a cycle';
  if (/bigint/i.test(message)) return 'a bigint is not JSON';
  if (error instanceof RangeError) return `is nested deeper than ${MAX_JSON_DEPTH} levels`;
  return 'JSON.stringify could not write it (a toJSON threw)';
}
