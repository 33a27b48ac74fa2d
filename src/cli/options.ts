/**
 * Strict parsing of the CLI's numeric options. `Number.parseInt` reads a
 * prefix ("1.5" -> 1, "1e3" -> 1, "0x10" -> 0), so a typo would act on the
 * wrong run; every numeric option accepts only a plain decimal integer in its
 * range and is otherwise a usage error (exit code 2) naming the option.
 */
import { InvalidArgumentError } from 'commander';
import { connectionStringProblem } from '../validation/connection-string.js';
import { ISO_TIME_RULE, parseIsoTime } from '../validation/iso-time.js';

/** Plain decimal digits, no sign, no spaces, no leading zeros (could be read as octal elsewhere). */
const DECIMAL_INTEGER = /^(0|[1-9][0-9]*)$/;

export interface IntegerRange {
  min: number;
  max?: number;
}

/** An argParser for `.option('--name <n>', ..., integerOption({ min: 1 }))`. */
export function integerOption(range: IntegerRange): (value: string) => number {
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  return (value: string) => {
    const n = DECIMAL_INTEGER.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < range.min || n > max) {
      const bounds = range.max === undefined ? `an integer >= ${range.min}` : `an integer from ${range.min} to ${range.max}`;
      throw new InvalidArgumentError(`Expected ${bounds}, written in plain decimal digits.`);
    }
    return n;
  };
}

/**
 * An argParser for a connection string option (`--listen-url`): a malformed one is a usage error naming
 * the option, rather than a LISTEN connection retried for ever.
 */
export function connectionUrlOption(value: string): string {
  const problem = connectionStringProblem(value);
  if (problem) throw new InvalidArgumentError(`The connection string ${problem}.`);
  return value;
}

/**
 * An argParser for a text option: `--type "$TYPE"` with $TYPE unset is an empty option, and dropping it would
 * widen the command to every type, so empty and whitespace-only values are refused, naming the option.
 */
export function textOption(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('It is empty or blank; leave the option out for no filter.');
  return value;
}

/** An argParser for a time option: ISO 8601 only (src/validation/iso-time.ts), never whatever `Date` makes of it. */
export function isoTimeOption(value: string): Date {
  const at = parseIsoTime(value);
  if (at === undefined) throw new InvalidArgumentError(`It ${ISO_TIME_RULE}.`);
  return at;
}
