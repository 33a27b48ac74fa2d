/**
 * zod sits at the public boundary only: every exported operation parses its
 * input here once, and internal code takes the parsed (inferred) types.
 * A failure names the offending field as a dotted path and nothing is written,
 * because parsing happens before any connection is used.
 */
import type { z } from 'zod';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { formatJsonPath } from './storable.js';

export function parseInput<S extends z.ZodType>(schema: S, input: unknown, code: ErrorCode, root = 'input'): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const issue = first && explainUnion(first);
  // The path can hold the caller's own keys, NUL included: printable form only.
  const pathOf = (i: z.core.$ZodIssue) => formatJsonPath(issuePath(i));
  const field = issue && issuePath(issue).length > 0 ? pathOf(issue) : root;
  throw new ValidationError(code, field, `Invalid ${field}: ${issue ? reason(issue) : 'is invalid'}`, {
    details: { issues: result.error.issues.map((i) => ({ path: pathOf(i) || root, message: reason(i) })) },
  });
}

/** Where an issue is: an unknown key is named itself (`priorty`), not the object holding it. */
function issuePath(issue: z.core.$ZodIssue): (string | number)[] {
  const path = issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
  return issue.code === 'unrecognized_keys' && issue.keys.length === 1 ? [...path, issue.keys[0]!] : path;
}

/**
 * zod's own message without its generic lead ("Invalid input: expected
 * object, received undefined"): the error's message already says which field
 * is invalid, so the reason follows it once.
 */
function reason(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys')
    return issue.keys.length === 1 ? 'is not a known field' : `has unknown fields ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  const text = issueReason(issue.message);
  // "expected object, received undefined" -> "must be an object (received undefined)"
  const typed = issue.code === 'invalid_type' ? /^expected (\w+), received (.+)$/.exec(text) : null;
  if (typed) return `must be ${/^[aeiou]/.test(typed[1]!) ? 'an' : 'a'} ${typed[1]} (received ${typed[2]})`;
  return text;
}

/**
 * A schema's issue message as the reason after `Invalid <field>: `: zod's
 * generic lead ("Invalid input: ", "Invalid option: ") is dropped, since the
 * field is already named. Also for the Standard Schema issues of a job
 * definition's schema (zod's among them), which other libraries word their own way.
 */
export function issueReason(message: string): string {
  const text = message
    .replace(/^Invalid (input|option)(: |$)/, '')
    .replace(/^expected one of /, 'must be one of ')
    .trim();
  return text === '' ? 'is invalid' : text;
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
