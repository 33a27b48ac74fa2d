/** `pgbouncer=true` in a connection string: runledger's own clients send statements unnamed, and pg never sees the parameter. */
import { describe, expect, it } from 'vitest';
import { poolerConnectionString } from '../../src/client/connect.js';

describe('poolerConnectionString', () => {
  it('reads pgbouncer=true and removes it, keeping every other parameter', () => {
    expect(poolerConnectionString('postgresql://u:p%40ss@pooler:6432/app?pgbouncer=true&sslmode=require')).toEqual({
      connectionString: 'postgresql://u:p%40ss@pooler:6432/app?sslmode=require',
      pooled: true,
    });
    expect(poolerConnectionString('postgres://u@h/app?application_name=x&pgbouncer=TRUE')).toEqual({
      connectionString: 'postgres://u@h/app?application_name=x',
      pooled: true,
    });
  });

  it('leaves a string without it untouched, and pgbouncer=false means named statements', () => {
    const plain = 'postgresql://u:p@h:5432/app?schema=runledger';
    expect(poolerConnectionString(plain)).toEqual({ connectionString: plain, pooled: false });
    expect(poolerConnectionString('postgresql://u@h/app?pgbouncer=false')).toEqual({ connectionString: 'postgresql://u@h/app', pooled: false });
    expect(poolerConnectionString('not a url?pgbouncer=true')).toEqual({ connectionString: 'not a url?pgbouncer=true', pooled: false });
  });
});
