/**
 * A handler that writes one row of the host application's own table per
 * job: what issue 22's transactional handlers are for. runledger runs it both
 * ways, transactional (`defineJob(..., { transaction })`: the row, the job's
 * outcome and its trail in one commit per job, exactly once) and direct (the
 * row autocommitted by the handler, the success batched: at least once, like
 * the peers); pg-boss and graphile-worker do the same write non-atomically
 * (their handler inserts through a pool of its own, then they complete). The
 * row count is checked after each run: every job wrote its row.
 */
import type { BenchConfig } from '../config.js';
import { withClient } from '../db.js';
import { HOST_ROWS_TABLE, type BenchSystem } from '../systems/types.js';
import { throughputWorkload } from './throughput.js';
import type { Workload } from './types.js';

export function hostWriteWorkload(config: BenchConfig, concurrency: number): Workload {
  const jobs = config.drainJobs;
  return throughputWorkload({
    key: `host_write_c${concurrency}`,
    title: `drain ${jobs.toLocaleString('en-US')} jobs writing one host row each, concurrency ${concurrency}`,
    size: `${jobs} jobs`,
    unit: 'jobs',
    units: jobs,
    notes: [
      'runledger transactional: the row and the completion in one transaction per job (exactly once); runledger direct, pg-boss, graphile-worker: the row autocommitted by the handler, the completion after it (at least once)',
    ],
    supports: (s: BenchSystem) => typeof s.hostWrite === 'function' && typeof s.seedNoop === 'function',
    async seed(s, url) {
      await withClient(url, (client) =>
        client.query(`CREATE TABLE ${HOST_ROWS_TABLE} (id bigserial PRIMARY KEY, n int NOT NULL, written_at timestamptz NOT NULL DEFAULT now())`),
      );
      await s.seedNoop!(url, jobs);
    },
    async run(s, url) {
      const timed = await s.hostWrite!(url, { jobs, concurrency });
      const rows = await withClient(url, async (client) =>
        Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${HOST_ROWS_TABLE}`)).rows[0]!.n),
      );
      if (rows < jobs) throw new Error(`${s.label}: ${rows} host rows for ${jobs} jobs`);
      // The count above is one more commit on the measured database.
      return { ...timed, harnessCommits: timed.harnessCommits + 1 };
    },
  });
}
