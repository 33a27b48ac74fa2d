/** `runledger dashboard`: served on 127.0.0.1, in the CLI's scope; a taken port is a usage error naming --port. */
import { describe, expect, it } from 'vitest';
import { startDashboardServer } from '../../src/cli/dashboard.js';
import type { CliContext } from '../../src/cli/context.js';
import { enqueueJob, isRunledgerError, organizationScope, type Scope } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

function cliContext(scope: Scope): CliContext {
  return {
    json: false,
    scope,
    db: () => db.newClient({ max: 2 }) as never,
    print: () => undefined,
    connectionString: () => db.url,
    connectTimeoutMs: () => 10_000,
  };
}

const defaults = { port: 0, host: '127.0.0.1', readOnly: false, basePath: '' };

describe('runledger dashboard', () => {
  it("binds to 127.0.0.1 and serves the CLI's scope only", async () => {
    await enqueueJob(db.prisma, { jobType: 'cli.dash', payload: {}, organizationId: 'org-a' });
    await enqueueJob(db.prisma, { jobType: 'cli.dash', payload: {}, organizationId: 'org-b' });
    const running = await startDashboardServer(cliContext(organizationScope('org-a')), defaults);
    try {
      expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:[0-9]+\/$/);
      const jobs = (await (await fetch(`${running.url}api/jobs`)).json()) as { items: { organizationId: string }[] };
      expect(jobs.items.map((job) => job.organizationId)).toEqual(['org-a']);
      const session = (await (await fetch(`${running.url}api/session`)).json()) as { scope: Scope; readOnly: boolean };
      expect(session).toMatchObject({ scope: { kind: 'organization', organizationId: 'org-a' }, readOnly: false });
    } finally {
      await running.close();
    }
  });

  it('reports a port already in use as cli.invalid_argument on --port', async () => {
    const first = await startDashboardServer(cliContext({ kind: 'admin' }), defaults);
    try {
      const port = Number(new URL(first.url).port);
      const error = await startDashboardServer(cliContext({ kind: 'admin' }), { ...defaults, port }).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'cli.invalid_argument') && error.details.field).toBe('--port');
    } finally {
      await first.close();
    }
  });
});
