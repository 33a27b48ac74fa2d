/**
 * zod sits at the public boundary only: every exported operation parses its
 * input here once, and internal code takes the parsed (inferred) types.
 * A failure names the offending field as a dotted path and nothing is written,
 * because parsing happens before any connection is used.
 */
import { z } from 'zod';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { formatJsonPath } from './storable.js';

export function parseInput<S extends z.ZodType>(schema: S, input: unknown, code: ErrorCode): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const issue = first && explainUnion(first);
  // The path can hold the caller's own keys, NUL included: printable form only.
  const pathOf = (i: z.core.$ZodIssue) => formatJsonPath(i.path.map((segment) => (typeof segment === 'number' ? segment : String(segment))));
  const field = issue && issue.path.length > 0 ? pathOf(issue) : 'input';
  const reason = issue?.message ?? 'is invalid';
  throw new ValidationError(code, field, `Invalid ${field}: ${reason}`, {
    details: { issues: result.error.issues.map((i) => ({ path: pathOf(i), message: i.message })) },
  });
}

/**
 * A union's failure names the field inside the one branch the input was
 * meant for (`telemetry.tracerProvider`, not `telemetry`): the branches that
 * refused its shape at their root (`false` for an object) are set aside, and
 * when exactly one branch is left, its first issue is reported under the
 * union's path.
 */
function explainUnion(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union') return issue;
  const meant = issue.errors.filter(
    (branch) => !(branch.length === 1 && branch[0]!.path.length === 0 && (branch[0]!.code === 'invalid_type' || branch[0]!.code === 'invalid_value')),
  );
  const inner = meant.length === 1 ? meant[0]![0] : undefined;
  return inner ? explainUnion({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue) : issue;
}
