/** poolDb's own text parsers (src/client/pg-values.ts): ISO timestamps with any offset, arrays, and no global fallback. */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseArray, parseDate, parseTimestamp, RUNLEDGER_TYPES } from '../../src/client/pg-values.js';

describe('parseTimestamp', () => {
  it.each([
    ['2026-03-04 05:06:07.089+00', '2026-03-04T05:06:07.089Z'],
    ['2026-03-04 05:06:07.0899+00', '2026-03-04T05:06:07.089Z'], // truncated to ms, as Prisma reads it
    ['2026-03-04 05:06:07.5+00', '2026-03-04T05:06:07.500Z'],
    ['2026-03-04 10:36:07+05:30', '2026-03-04T05:06:07.000Z'],
    ['1626-03-04 00:06:07.089-04:56:02', '1626-03-04T05:02:09.089Z'], // a local mean time offset, seconds and all
    ['2026-03-04 05:06:07.089', '2026-03-04T05:06:07.089Z'], // timestamp without zone: UTC
    ['0044-03-15 12:00:00+00 BC', '-000043-03-15T12:00:00.000Z'],
    ['0099-01-01 00:00:00+00', '0099-01-01T00:00:00.000Z'],
    // The UTC session's own form (read without the regular expression), at every fraction length.
    ['2026-03-04 05:06:07+00', '2026-03-04T05:06:07.000Z'],
    ['2026-03-04 05:06:07.08+00', '2026-03-04T05:06:07.080Z'],
    ['2026-12-31 23:59:59.999999+00', '2026-12-31T23:59:59.999Z'],
    ['2024-02-29 00:00:00.000001+00', '2024-02-29T00:00:00.000Z'],
    ['1000-01-01 00:00:00.1+00', '1000-01-01T00:00:00.100Z'],
    ['2026-03-04 05:06:07.089+00:30', '2026-03-04T04:36:07.089Z'], // "+00" then more: the general form
  ])('reads %s', (text, iso) => {
    expect(parseTimestamp(text).toISOString()).toBe(iso);
  });

  it('reads infinity as an Invalid Date, as Prisma does, and refuses a non-ISO DateStyle instead of reading null', () => {
    expect(Number.isNaN(parseTimestamp('infinity').getTime())).toBe(true);
    expect(() => parseTimestamp('04/03/2026 05:06:07.089 UTC')).toThrow(/DateStyle/);
    expect(() => parseTimestamp('Wed 04 Mar 05:06:07.089 2026 UTC')).toThrow(/DateStyle/);
    // Shaped like the UTC form but not it: refused as before, never read as a wrong instant.
    expect(() => parseTimestamp('2026-03-04 05:06:07.+00')).toThrow(/DateStyle/);
    expect(() => parseTimestamp('2026-03-04T05:06:07.089+00')).toThrow(/DateStyle/);
    expect(() => parseTimestamp('2026-0x-04 05:06:07.089+00')).toThrow(/DateStyle/);
    expect(parseDate('2026-03-04').toISOString()).toBe('2026-03-04T00:00:00.000Z');
    expect(() => parseDate('04.03.2026')).toThrow(/DateStyle/);
  });
});

describe('parseArray', () => {
  it('reads quoting, escapes, NULL and empty arrays', () => {
    expect(parseArray('{a,"b,c","d\\"e","f\\\\g",NULL,"NULL",""," s "}', (text) => text)).toEqual(['a', 'b,c', 'd"e', 'f\\g', null, 'NULL', '', ' s ']);
    expect(parseArray('{}', Number)).toEqual([]);
    expect(parseArray('[0:1]={1,2}', Number)).toEqual([1, 2]);
  });
});

const TIMETZ = pg.types.builtins.TIMETZ;

describe('RUNLEDGER_TYPES', () => {
  it('never falls back to the global parsers', () => {
    const before = pg.types.getTypeParser(TIMETZ, 'text');
    const int8 = pg.types.getTypeParser(20, 'text');
    pg.types.setTypeParser(TIMETZ, () => 'hostile');
    pg.types.setTypeParser(20, () => 'hostile');
    try {
      expect(RUNLEDGER_TYPES.getTypeParser(TIMETZ, 'text')('12:00:00+02')).toBe('12:00:00+02'); // not a type runledger reads: its text
      expect(RUNLEDGER_TYPES.getTypeParser(20, 'text')('12')).toBe(12n);
    } finally {
      pg.types.setTypeParser(TIMETZ, before);
      pg.types.setTypeParser(20, int8);
    }
  });
});
