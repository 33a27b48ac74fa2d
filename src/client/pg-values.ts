/**
 * poolDb's own text parsers, handed to pg with every statement (`types` in
 * the query config), so what runledger reads never depends on what the host
 * set with `pg.types.setTypeParser`, a process-wide table: not one parser
 * here falls back to it. Each gives what the Prisma client gives for the
 * same column (int8 and oid as BigInt, numeric as Prisma's Decimal,
 * timestamps and dates as Dates, json parsed, arrays as arrays); a type not
 * listed is returned as PostgreSQL's text, as Prisma returns a type of the
 * host's own.
 *
 * Timestamps are read from DateStyle ISO output, which PoolDb pins on every
 * connection it uses (pool-db.ts); any other form is an error, never a null
 * or an Invalid Date passed on as a value. The zone offset written in the
 * text decides the instant, so the session's TimeZone does not matter.
 */
import { Decimal } from '@prisma/client/runtime/client';
import type pg from 'pg';

type Parse = (text: string) => unknown;

const identity: Parse = (text) => text;

/** `YYYY-MM-DD HH:MM:SS[.fraction][±HH[:MM[:SS]]][ BC]`: DateStyle ISO; no offset for `timestamp` (read as UTC, as Prisma does). */
const ISO_TIMESTAMP = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?( BC)?$/;
const ISO_DATE = /^(\d{4,})-(\d\d)-(\d\d)( BC)?$/;

function utc(yearText: string, bc: string | undefined, month: string, day: string, h = 0, m = 0, s = 0, ms = 0): Date {
  // Year 1 BC is year 0 of the proleptic Gregorian calendar Date counts in.
  const year = bc ? 1 - Number(yearText) : Number(yearText);
  const date = new Date(Date.UTC(2000, Number(month) - 1, Number(day), h, m, s, ms));
  date.setUTCFullYear(year); // Date.UTC reads years 0-99 as 1900-1999
  return date;
}

/** The digits of text[start, start + count) as a number; -1 when one is not a digit. */
function digitsAt(text: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i += 1) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * `YYYY-MM-DD HH:MM:SS[.fraction]+00` with a year from 1000, what a session pinned to UTC writes for every
 * timestamptz runledger reads, without the regular expression and its captured strings: a claim reads
 * several timestamps per job, and the general parser below was ~3% of a drain's Node CPU (node --cpu-prof,
 * bench/probes/worker-drain.ts). Undefined for any other form, which the general parser reads.
 */
function parseUtcTimestamp(text: string): Date | undefined {
  const n = text.length;
  if (n < 22 || n > 29 || n === 23) return undefined;
  if (text.charCodeAt(n - 3) !== 43 || text.charCodeAt(n - 2) !== 48 || text.charCodeAt(n - 1) !== 48) return undefined; // "+00"
  if (text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) {
    return undefined;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const h = digitsAt(text, 11, 2);
  const m = digitsAt(text, 14, 2);
  const s = digitsAt(text, 17, 2);
  if (year < 1000 || month < 0 || day < 0 || h < 0 || m < 0 || s < 0) return undefined;
  let ms = 0;
  if (n > 22) {
    // ".f" to ".ffffff": milliseconds truncated, as the general parser does.
    if (text.charCodeAt(19) !== 46) return undefined;
    const fractionDigits = n - 23;
    const fraction = digitsAt(text, 20, fractionDigits);
    if (fraction < 0) return undefined;
    ms = fractionDigits >= 3 ? Math.floor(fraction / 10 ** (fractionDigits - 3)) : fraction * 10 ** (3 - fractionDigits);
  }
  return new Date(Date.UTC(year, month - 1, day, h, m, s, ms));
}

export function parseTimestamp(text: string): Date {
  // No Date holds infinity: Prisma reads it as an Invalid Date too.
  if (text === 'infinity' || text === '-infinity') return new Date(Number.NaN);
  const utcForm = parseUtcTimestamp(text);
  if (utcForm !== undefined) return utcForm;
  const match = ISO_TIMESTAMP.exec(text);
  if (!match) throw new Error(`poolDb: unexpected timestamp text ${JSON.stringify(text)} (is DateStyle ISO?)`);
  const [, year, month, day, h, m, s, fraction, sign, oh, om, os, bc] = match;
  // Milliseconds, truncated like Prisma's and pg's own parsers.
  const ms = fraction ? Number(fraction.padEnd(3, '0').slice(0, 3)) : 0;
  const date = utc(year!, bc, month!, day!, Number(h), Number(m), Number(s), ms);
  if (sign) {
    const offsetMs = ((Number(oh) * 60 + Number(om ?? 0)) * 60 + Number(os ?? 0)) * 1_000;
    date.setTime(date.getTime() - (sign === '+' ? offsetMs : -offsetMs));
  }
  return date;
}

export function parseDate(text: string): Date {
  if (text === 'infinity' || text === '-infinity') return new Date(Number.NaN);
  const match = ISO_DATE.exec(text);
  if (!match) throw new Error(`poolDb: unexpected date text ${JSON.stringify(text)} (is DateStyle ISO?)`);
  return utc(match[1]!, match[4], match[2]!, match[3]!);
}

/**
 * A one-dimensional array literal (`{a,"b,c",NULL}`), each element read with `parse`. Quoted elements may hold
 * `\"` and `\\`; an unquoted NULL is SQL NULL. (Prisma reads no multi-dimensional array.)
 */
export function parseArray(text: string, parse: Parse): unknown[] {
  const start = text.indexOf('{'); // after an optional `[1:2]=` bounds decoration
  if (start < 0 || !text.endsWith('}')) throw new Error(`poolDb: unexpected array text ${JSON.stringify(text)}`);
  const items: unknown[] = [];
  let i = start + 1;
  const end = text.length - 1;
  while (i < end) {
    let item: string;
    let quoted = false;
    if (text[i] === '"') {
      quoted = true;
      item = '';
      i += 1;
      while (i < end && text[i] !== '"') {
        if (text[i] === '\\') i += 1;
        item += text[i];
        i += 1;
      }
      i += 1; // the closing quote
    } else {
      const comma = text.indexOf(',', i);
      const stop = comma < 0 || comma > end ? end : comma;
      item = text.slice(i, stop);
      i = stop;
    }
    items.push(!quoted && item === 'NULL' ? null : parse(item));
    i += 1; // the comma
  }
  return items;
}

const bool: Parse = (text) => text === 't';
const json: Parse = (text) => JSON.parse(text);
const decimal: Parse = (text) => new Decimal(text);

/** Scalar OIDs and their array OIDs (pg_type.typarray). */
const SCALARS: ReadonlyArray<[oid: number, arrayOid: number, parse: Parse]> = [
  [16, 1000, bool],
  [18, 1002, identity], // "char"
  [19, 1003, identity], // name
  [20, 1016, BigInt], // int8
  [21, 1005, Number], // int2
  [23, 1007, Number], // int4
  [25, 1009, identity], // text
  [26, 1028, BigInt], // oid: Prisma's Int64
  [114, 199, json],
  [700, 1021, Number], // float4: Number reads NaN and Infinity as parseFloat does
  [701, 1022, Number], // float8
  [1042, 1014, identity], // bpchar
  [1043, 1015, identity], // varchar
  [1082, 1182, parseDate],
  [1114, 1115, parseTimestamp],
  [1184, 1185, parseTimestamp],
  [1700, 1231, decimal],
  [2950, 2951, identity], // uuid
  [3802, 3807, json], // jsonb
];

const PARSERS: ReadonlyMap<number, Parse> = new Map(
  SCALARS.flatMap(([oid, arrayOid, parse]): [number, Parse][] => [
    [oid, parse],
    [arrayOid, (text) => parseArray(text, parse)],
  ]),
);

/** The `types` of every statement PoolDb sends (results in text format: pg asks for no binary results unless told). */
export const RUNLEDGER_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number) => PARSERS.get(oid) ?? identity) as pg.CustomTypesConfig['getTypeParser'],
};
