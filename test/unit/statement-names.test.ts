import { createHash } from 'node:crypto';
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { preparedStatementName } from '../../src/client/connect.js';
import { PoolDb } from '../../src/client/pool-db.js';
import { asTemplate } from '../../src/db/sql-template.js';

// Names are remembered per statement shape (pool-db.ts by template pieces, connect.ts by a fingerprint of
// the text): a remembered name must be exactly the one the text alone gives, and two texts never share one.
function capturingPoolDb(): { db: PoolDb; sent: pg.QueryConfig[] } {
  const sent: pg.QueryConfig[] = [];
  const client = {
    query: async (config: pg.QueryConfig | string) => {
      if (typeof config !== 'string') sent.push(config);
      return { rows: [], rowCount: 0 };
    },
    release() {},
    on() {},
    removeListener() {},
  };
  // Already pinned as far as the session check knows: no ParameterStatus source, so it pins once by SET.
  const pool = { connect: async () => client, on() {}, listeners: () => [], removeListener() {} };
  return { db: new PoolDb(pool as unknown as pg.Pool), sent };
}

const rlp = (text: string) => `rlp_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;

describe('poolDb statement names', () => {
  it('names each text by its SHA-1 and sends the text a fresh build gives, call after call', async () => {
    const { db, sent } = capturingPoolDb();
    const statement = (a: number, b: string): Sql => sqltag`SELECT ${a}::int AS a, ${b}::text AS b`;
    const composed = (flag: boolean): Sql => sqltag`SELECT 1 FROM t WHERE ${flag ? sqltag`x = ${1}` : sqltag`y = ${2}`} AND z = ${3}`;
    for (let i = 0; i < 3; i++) {
      await db.$queryRaw(...asTemplate(statement(i, `v${i}`)));
      await db.$queryRaw(...asTemplate(composed(i % 2 === 0)));
    }
    const expected = [statement(0, ''), composed(true), statement(0, ''), composed(false), statement(0, ''), composed(true)];
    expect(sent.map((c) => c.text)).toEqual(expected.map((s) => s.text));
    expect(sent.map((c) => c.name)).toEqual(expected.map((s) => rlp(s.text)));
    expect(sent.map((c) => c.values)).toEqual([
      [0, 'v0'],
      [1, 3],
      [1, 'v1'],
      [2, 3],
      [2, 'v2'],
      [1, 3],
    ]);
    // The two branches of the composed statement share their first piece and differ after it.
    expect(sent[1]!.name).not.toBe(sent[3]!.name);
  });
});

describe('preparedStatementName', () => {
  const uncached = (sql: string, argTypes: unknown[]) =>
    `rl_${createHash('sha1').update(sql).update('\0').update(JSON.stringify(argTypes)).digest('hex').slice(0, 24)}`;

  it('gives the name of the text and types alone, remembered or not, and never one name to two texts', () => {
    const long = 'SELECT 1 '.repeat(600);
    const cases: [string, unknown[]][] = [
      [`${long}WHERE a = $1`, [{ scalarType: 'int' }]],
      [`${long}WHERE a = $1`, [{ scalarType: 'string' }]],
      // Same length and the same 48 characters at both ends: only the middle differs.
      [`${long.slice(0, 100)}X${long.slice(101)}WHERE a = $1`, [{ scalarType: 'int' }]],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [sql, argTypes] of cases) expect(preparedStatementName({ sql: `${sql}`, argTypes })).toBe(uncached(sql, argTypes));
    }
    expect(new Set(cases.map(([sql, argTypes]) => preparedStatementName({ sql, argTypes }))).size).toBe(3);
  });

  it('keeps naming correctly past the number of shapes it remembers', () => {
    for (let i = 0; i < 2_500; i++) {
      const sql = `SELECT ${i}`;
      expect(preparedStatementName({ sql, argTypes: [] })).toBe(uncached(sql, []));
    }
  });
});
