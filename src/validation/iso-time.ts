/**
 * Instants given as text (a CLI option, a query string, a JSON body) are read
 * by this one parser. `new Date(text)` takes anything: "1" is 2001 and
 * 2026-02-30 rolls over to 2 March, so a typo in a time filter would move or
 * widen the rows an action changes. Accepted: a date (midnight UTC), or a
 * date and time with its zone (`Z` or `+hh:mm`); without a zone `Date` would
 * read the server's local time.
 */
import { z } from 'zod';
import { timestamp } from './primitives.js';

export const ISO_TIME_EXAMPLE = '2026-12-01T09:30:00Z';
export const ISO_TIME_RULE = `must be an ISO 8601 date, or date and time with a zone, such as ${ISO_TIME_EXAMPLE}`;

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2})))?$/;

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}

/** The instant `text` names in the grammar above (years 1 to 9999), or undefined. */
export function parseIsoTime(text: string): Date | undefined {
  const parts = ISO_8601.exec(text);
  if (!parts) return undefined;
  const [year, month, day, hour = 0, minute = 0, second = 0, offsetHours = 0, offsetMinutes = 0] = parts
    .slice(1)
    .map((p) => (p === undefined ? undefined : Number(p)));
  const inCalendar = month! >= 1 && month! <= 12 && day! >= 1 && day! <= daysInMonth(year!, month!);
  if (!inCalendar || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const at = new Date(text);
  return timestamp.safeParse(at).success ? at : undefined;
}

/** An ISO 8601 string (parseIsoTime) as a Date; anything else is refused with the rule. */
export const isoTime = z.string().transform((text, ctx) => {
  const at = parseIsoTime(text);
  if (at === undefined) ctx.addIssue({ code: 'custom', message: ISO_TIME_RULE, input: text });
  return at ?? z.NEVER;
});
