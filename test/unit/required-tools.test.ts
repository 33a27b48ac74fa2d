import { describe, expect, it } from 'vitest';
import { toolRequired } from '../harness/required-tools.js';

describe('toolRequired (a missing Chromium or PgBouncer fails CI, and skips elsewhere)', () => {
  it('is required when its own variable is 1 or CI is set to something true, and only then', () => {
    const required = (env: NodeJS.ProcessEnv) => toolRequired('RUNLEDGER_REQUIRE_BROWSER', env);
    expect(required({})).toBe(false);
    expect(required({ RUNLEDGER_REQUIRE_BROWSER: '1' })).toBe(true);
    expect(required({ RUNLEDGER_REQUIRE_PGBOUNCER: '1' })).toBe(false);
    expect(required({ RUNLEDGER_REQUIRE_BROWSER: '0' })).toBe(false);
    expect([required({ CI: 'true' }), required({ CI: '1' }), required({ CI: 'woodpecker' })]).toEqual([true, true, true]);
    expect([required({ CI: '' }), required({ CI: 'false' }), required({ CI: 'FALSE' }), required({ CI: '0' })]).toEqual([false, false, false, false]);
  });
});
