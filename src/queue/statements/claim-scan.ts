/**
 * The claim's ordered scan of the jobs without a fairness key, shared by both claim statements
 * (claim-jobs.ts, claim-lean.ts), and the literal LIMIT buckets its generic plan needs.
 */
import { join, sqltag, type Sql } from '@prisma/client/runtime/client';

/** The candidate columns every branch of the claim yields (the admissions read them). */
export const CANDIDATE_COLUMNS = sqltag`jq.id, jq.ctid, jq.concurrency_key, jq.rate_key, jq.priority, jq.next_run_at`;

export interface PlainScan {
  jobTypes: string[] | undefined;
  limit: number;
  /** The scan's own LIMIT, a literal (limitBucket). */
  bucket: Sql;
  /** The candidate's other snapshot tests, on `jq`. */
  open: Sql;
}

/** Up to `limit` due jobs without a fairness key, locked (SKIP LOCKED), in claim order, as CANDIDATE_COLUMNS. */
export function plainScan({ jobTypes, limit, bucket, open }: PlainScan): Sql {
  return jobTypes === undefined
    ? sqltag`
        -- No type filter: one ordered scan of job_queue_claim_idx. Its always-true \`priority >= -2147483648\`
        -- matches that index's predicate, which only this shape states, so a typed claim (whose planner
        -- cannot know how types and priorities correlate) never picks that index: see the migrations
        -- (20261201000000_job_step_link, 20261206000001_claim_idx_predicate).
        SELECT b.id, b.ctid, b.concurrency_key, b.rate_key, b.priority, b.next_run_at FROM (
          SELECT ${CANDIDATE_COLUMNS}
            FROM runledger.job_queue jq
           WHERE jq.claimable AND jq.fair_key IS NULL AND jq.priority >= -2147483648 AND jq.next_run_at <= now()
             AND ${open}
           ORDER BY jq.priority DESC, jq.next_run_at, jq.id
           LIMIT ${bucket}
             FOR UPDATE SKIP LOCKED
        ) b
        LIMIT ${limit}::int`
    : sqltag`
        -- One ordered scan of job_queue_claim_by_type_idx per requested type, merged. With one type the
        -- outer LIMIT reads the scan in order and locks \`limit\` rows; with several, each type's scan locks
        -- up to the bucket, and rows beyond the merged \`limit\` are unlocked when the statement commits.
        SELECT c.id, c.ctid, c.concurrency_key, c.rate_key, c.priority, c.next_run_at
          FROM ${typeValues(jobTypes)}
         CROSS JOIN LATERAL (
           SELECT ${CANDIDATE_COLUMNS}
             FROM runledger.job_queue jq
            WHERE jq.claimable AND jq.fair_key IS NULL AND jq.job_type = t.job_type AND jq.next_run_at <= now()
              AND ${open}
            ORDER BY jq.priority DESC, jq.next_run_at, jq.id
            LIMIT ${bucket}
              FOR UPDATE SKIP LOCKED
         ) c
         ${jobTypes.length === 1 ? sqltag`` : sqltag`ORDER BY c.priority DESC, c.next_run_at, c.id`}
         LIMIT ${limit}::int`;
}

/**
 * The claimed types as `t(job_type)`, one VALUES row each: an unnest of an array parameter is estimated at 10
 * rows whatever its length, so a worker's claims share one statement per distinct number of types.
 */
export function typeValues(jobTypes: readonly string[]): Sql {
  return sqltag`(VALUES ${join(jobTypes.map((jobType) => sqltag`(${jobType}::text)`))}) AS t(job_type)`;
}

/**
 * The execution-resource condition of a candidate: no key, or the key free and this job its
 * head, tested by `runledger.resource_claimable` (migration 20261206000001_claim_plans: one index probe per
 * test, only for jobs with a key; the `IS NULL` arm short-circuits the rest). A function rather than inline
 * subqueries so the planner costs it as one cheap test and keeps the ordered index scan. A claim reads past
 * the blocked jobs ahead of the first runnable ones, so a deep backlog of one key ahead of other work costs
 * each claim in proportion to that backlog (docs/operate/performance.md says so).
 */
export const RESOURCE_FREE_HEAD = sqltag`(jq.resource_key IS NULL OR runledger.resource_claimable(jq.resource_key, jq.id))`;

/**
 * The claim scans' LIMIT, written as a literal (see claim-jobs.ts): the smallest bucket at or above `limit`,
 * so a worker whose claim size varies with its free slots shares a few statements, not one per size.
 * Static text from this table, never from input.
 */
const LIMIT_BUCKETS: readonly (readonly [number, Sql])[] = [
  [1, sqltag`1`],
  [2, sqltag`2`],
  [4, sqltag`4`],
  [8, sqltag`8`],
  [16, sqltag`16`],
  [32, sqltag`32`],
  [64, sqltag`64`],
  [128, sqltag`128`],
  [256, sqltag`256`],
  [512, sqltag`512`],
  [1024, sqltag`1024`],
];

/**
 * A generic plan costs the outer `LIMIT limit` parameter as a tenth of the scan's rows (at most the bucket), and
 * PostgreSQL keeps it only when that costs no more than the custom plans did: a bucket at most 8x the limit keeps
 * the generic plan behind any backlog (queue-claim-generic-plan.test.ts).
 */
const COARSE_BUCKETS = new Set([1, 8, 64, 512, 1024]);

export function limitBucket(limit: number, spacing: 'fine' | 'coarse' = 'fine'): Sql {
  const found = LIMIT_BUCKETS.find(([size]) => size >= limit && (spacing === 'fine' || COARSE_BUCKETS.has(size)));
  if (!found) throw new RangeError(`claim limit ${limit} is above the largest bucket`);
  return found[1];
}

/** Several types: each type's scan locks up to its bucket, so buckets are close (powers of two); one scan is read by the outer LIMIT, so a coarser bucket locks no more and makes fewer statements. */
export function scanBucket(limit: number, jobTypes: readonly string[] | undefined): Sql {
  return limitBucket(limit, jobTypes === undefined || jobTypes.length === 1 ? 'coarse' : 'fine');
}
