/**
 * Whether a missing optional tool (Chromium, PgBouncer) fails the run instead of skipping its tests. CI must
 * prove what those tests cover, so .ci/run sets RUNLEDGER_REQUIRE_BROWSER=1 and RUNLEDGER_REQUIRE_PGBOUNCER=1,
 * and any CI that sets `CI` counts too; a developer's machine without the tool skips with a printed reason.
 */
export type RequiredTool = 'RUNLEDGER_REQUIRE_BROWSER' | 'RUNLEDGER_REQUIRE_PGBOUNCER';

export function toolRequired(variable: RequiredTool, env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = env.CI !== undefined && !['', '0', 'false'].includes(env.CI.toLowerCase());
  return env[variable] === '1' || ci;
}
