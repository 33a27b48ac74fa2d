/**
 * Fair claiming (migration 20270101000003_fair_claims): the claim's candidates from jobs that name a fairness
 * key, as CTEs of its statement (src/queue/statements/claim-jobs.ts).
 *
 * Order a claim gives (docs/guide/flow-control.md, "Fair claiming"): higher priority first; within a priority,
 * the open keys of a type take turns, a key of weight w taking w jobs per round, and the jobs without a key
 * take one turn as if they were one more key; within a key, the usual order (next_run_at, id). A claim walks
 * at most `limit` keys, starting after the worker's cursor (the last key its previous claim took from), so
 * consecutive claims visit every key even when there are more keys than a claim takes jobs.
 *
 * Locks: each key's share is locked with SKIP LOCKED like the unkeyed scan (no waits); shares the merge does
 * not take are unlocked when the statement ends: the shares lock at most `limit` plus one row per key walked
 * (rounding), beside the unkeyed scan's `limit`.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { CANDIDATE_COLUMNS, typeValues } from './claim-scan.js';

export interface FairBranch {
  /** The claim's types; undefined: every type (the untyped claim). */
  jobTypes: string[] | undefined;
  limit: number;
  /** The key the walk starts after ('' : the first key). */
  after: string;
  /** The candidate's other snapshot tests (execution resource, concurrency and rate keys), on `jq`. */
  open: Sql;
}

/**
 * CTEs `fair_groups`, `fair_shares` and `fair`: the open keys walked (with their weights), each key's share of
 * the claim (`limit` split by weight, rounded up), and each key's first due jobs up to its share, locked, with
 * their turn (place in the key / weight).
 */
export function fairBranch({ jobTypes, limit, after, open }: FairBranch): Sql {
  const groups =
    jobTypes === undefined
      ? sqltag`SELECT NULL::text AS job_type, g.group_key, g.group_weight, g.ord
          FROM runledger.fair_groups(NULL::text, ${after}::text, ${limit}::int) WITH ORDINALITY AS g(group_key, group_weight, ord)`
      : sqltag`SELECT t.job_type, g.group_key, g.group_weight, g.ord
          FROM ${typeValues(jobTypes)}
         CROSS JOIN LATERAL runledger.fair_groups(t.job_type, ${after}::text, ${limit}::int) WITH ORDINALITY AS g(group_key, group_weight, ord)`;
  // Each shape states its index's predicate and key order (job_queue_fair_by_type_idx, job_queue_fair_idx).
  const ofType = jobTypes === undefined ? sqltag`` : sqltag`AND jq.job_type = s.job_type`;
  return sqltag`fair_groups AS MATERIALIZED (${groups}),
      fair_shares AS MATERIALIZED (
        SELECT g.job_type, g.group_key, g.group_weight,
               ceil(${limit}::int * g.group_weight::numeric / sum(g.group_weight) OVER ())::int AS share
          FROM fair_groups g
      ),
      fair AS (
        SELECT f.id, f.ctid, f.concurrency_key, f.rate_key, f.priority, f.next_run_at,
               (row_number() OVER (PARTITION BY s.job_type, s.group_key ORDER BY f.priority DESC, f.next_run_at, f.id) - 1)::float8
                 / s.group_weight AS turn
          FROM fair_shares s
         CROSS JOIN LATERAL (
           SELECT ${CANDIDATE_COLUMNS}
             FROM runledger.job_queue jq
            WHERE jq.claimable AND jq.fair_key IS NOT NULL AND jq.fair_key = s.group_key ${ofType}
              AND jq.next_run_at <= now() AND ${open}
            ORDER BY jq.priority DESC, jq.next_run_at, jq.id
            LIMIT s.share
              FOR UPDATE SKIP LOCKED
         ) f
      )`;
}

/**
 * The next claim's cursor: the last key this claim's walk reached (NULL: it reached none). Keys the walk
 * reached but the claim took nothing of (their jobs locked or held by a limit) wait for the next round.
 */
export const FAIR_NEXT = sqltag`(SELECT g.group_key FROM fair_groups g ORDER BY g.ord DESC LIMIT 1) AS fair_next`;
