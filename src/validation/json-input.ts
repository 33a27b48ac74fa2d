/**
 * Compile-time check that a job's payload type is JSON. A payload is stored
 * as JSON and is validated as storable when enqueued, so a schema whose input
 * accepts a `Date`, a `bigint`, a `Map` or a function compiles into a
 * definition that fails every enqueue at run time. `NonJsonPaths<T>` names
 * each such place (`payload.dueAt is a Date`), `never` when there is none;
 * `defineJob` refuses a schema with any (src/job/define-job.ts).
 *
 * Interfaces pass (no index signature needed, unlike `JsonValue`); `unknown`
 * and `any` pass (checked when stored); optional members may be undefined
 * (JSON leaves them out). Past MAX_DEPTH levels (recursive schemas) the
 * check stops and the run-time validation decides.
 */
type MaxDepth = [never, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

export type NonJsonPaths<T, Path extends string = 'payload', Depth extends number = 10> = 0 extends 1 & T
  ? never // any
  : unknown extends T
    ? never // unknown: decided when stored
    : [Depth] extends [never]
      ? never
      : NonJsonMember<T, Path, Depth>;

type NonJsonMember<T, Path extends string, Depth extends number> = T extends string | number | boolean | null | undefined
  ? never
  : T extends Date
    ? `${Path} is a Date (send an ISO string)`
    : T extends bigint
      ? `${Path} is a bigint (send a string or a number)`
      : T extends symbol
        ? `${Path} is a symbol`
        : T extends (...args: never[]) => unknown
          ? `${Path} is a function`
          : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
            ? `${Path} is a Map or Set`
            : T extends readonly (infer Element)[]
              ? NonJsonPaths<Element, `${Path}[]`, MaxDepth[Depth]>
              : T extends object
                ? { [K in keyof T & string]-?: NonJsonPaths<Exclude<T[K], undefined>, `${Path}.${K}`, MaxDepth[Depth]> }[keyof T & string]
                : `${Path} is not JSON`;

/**
 * `unknown` when the schema's input is JSON; otherwise an object type whose
 * required properties are the problems, so a `schema: S & JsonInput<...>`
 * parameter fails to compile with an error that names them.
 */
export type JsonInput<Input> = [NonJsonPaths<Input>] extends [never] ? unknown : { readonly [Problem in NonJsonPaths<Input>]: never };
