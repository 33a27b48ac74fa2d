/**
 * Cron slots, computed with `croner` (a maintained, dependency-free parser;
 * nothing here parses cron itself). A schedule's slots are the instants its
 * expression matches in its IANA timezone; the database stores only the next
 * one (`next_run_at`), so every question below is "which slots lie in this
 * interval", answered from that cursor.
 *
 * Expressions: five fields (minute precision) or six (leading seconds), the
 * usual ranges, lists, steps and names, `L`, `#`, `W`, and nicknames such as
 * `@daily`. Day-of-month and day-of-week combine with OR, as in Vixie cron.
 *
 * Daylight saving time (croner's fixed-time rule, kept as is): a slot whose
 * local time does not exist on a spring-forward day (Europe/Berlin daily
 * 02:30 on the last Sunday of March) runs once, at the first valid time after
 * the gap (03:00 local); a local time that occurs twice on a fall-back day
 * runs once, at its first occurrence (02:30 CEST). Interval-style expressions
 * (wildcards or steps in the hour field) follow the wall clock through the
 * change. Schedules in UTC (the default) have no such days.
 */
import { Cron } from 'croner';

export interface CronSpec {
  cron: string;
  timezone: string;
}

/** Why `timezone` is not an IANA zone this runtime knows, or undefined when it is. */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return 'must be an IANA timezone name such as UTC or Europe/Berlin';
  }
}

/** Why `cron` is not a usable expression (in a valid `timezone`), or undefined when it is. */
export function cronProblem(cron: string, timezone: string, now: Date): string | undefined {
  let parsed: Cron;
  try {
    parsed = compile({ cron, timezone });
  } catch (error) {
    // croner's messages name the part at fault ("exactly five, six, or seven ... parts"); they hold no secrets.
    return `must be a cron expression (${error instanceof Error ? error.message : 'unparsable'})`;
  }
  if (parsed.nextRun(now) === null) return 'never matches a future time';
  return undefined;
}

/** The first slot strictly after `after`, or null when the expression never matches again. */
export function nextSlotAfter(spec: CronSpec, after: Date): Date | null {
  return compile(spec).nextRun(after);
}

export interface DueSlots {
  /** The slots to materialise now, oldest first: the latest `maxSlots` in [cursor, now]. */
  slots: Date[];
  /** The schedule's new cursor: the first slot after `now` (null: no slot ever again). */
  next: Date | null;
}

/**
 * The slots due at `now` for a schedule whose next unmaterialised slot is
 * `cursor` (itself a slot): at most `maxSlots`, the latest ones. Found by
 * walking back from `now`, so a schedule that was down for a year costs
 * `maxSlots` steps, not a year of slots.
 */
export function dueSlots(spec: CronSpec, cursor: Date, now: Date, maxSlots: number): DueSlots {
  const cron = compile(spec);
  const next = cron.nextRun(now);
  if (cursor.getTime() > now.getTime()) return { slots: [], next: cursor };
  // previousRuns excludes a slot exactly at its reference, so look from just after `now`.
  const latest = cron
    .previousRuns(maxSlots, new Date(now.getTime() + 1))
    .filter((slot) => slot.getTime() >= cursor.getTime() && slot.getTime() <= now.getTime())
    .reverse();
  // The cursor is a slot and is due; should the parser's backward walk disagree with its forward one
  // (a DST edge), the cursor itself still runs rather than nothing.
  return { slots: latest.length > 0 ? latest : [cursor], next };
}

function compile(spec: CronSpec): Cron {
  // No callback: croner arms no timer; this object only answers questions about dates.
  return new Cron(spec.cron, { timezone: spec.timezone, mode: '5-or-6-parts', paused: true });
}
