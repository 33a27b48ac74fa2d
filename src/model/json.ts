/**
 * A JSON value as runledger stores it (payloads, outputs, checkpoints, progress).
 * Defined in the leaf floor so row types need nothing above them; the zod
 * schema that checks a value is storable lives in src/validation/primitives.ts.
 */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
