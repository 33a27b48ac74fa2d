/**
 * Rate keys' tokens (runledger.rate_limits, migration 20270101000002_rate_limits), taken by the claim, as CTEs
 * of its statement.
 *
 * A token bucket per key: the claim refills it to its own now() under the key row's lock, admits a key's
 * candidates only up to the whole tokens it reads there, and subtracts the jobs it leased. Nothing else
 * takes or gives tokens: every lease is a start, and a lease that ends early still started.
 *
 * Lock order (src/coordination/locking.ts): rate rows after the claim's job rows and concurrency seats, in
 * key order, with waits: claims of one key queue on its row for the length of a commit.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';

/**
 * A candidate's snapshot test (`jq` the job row): no rate key, or the job among its key's first due jobs that
 * the key's whole tokens can take (runledger.rate_open, migration 20270101000002). Keeps a key's jobs beyond
 * its tokens out of the claim's LIMIT; the admission below decides.
 */
export function rateOpen(claimLimit: number): Sql {
  return sqltag`(jq.rate_key IS NULL OR runledger.rate_open(jq.rate_key, jq.id, ${claimLimit}::int))`;
}

/** The tokens of rate row `r` as of now() (the bucket refilled, at most its burst). */
const tokensNow = (r: string) => raw(`runledger.rate_tokens(${r}.tokens, ${r}.refilled_at, now(), ${r}.max_starts, ${r}.period_ms, ${r}.burst)`);

/**
 * CTE `admitted` (the `passed` candidates to lease: those without a rate key, and each key's first ones in
 * claim order up to its whole tokens, with their `concurrency_seat`). `passed` has id, ctid, rate_key, priority,
 * next_run_at, concurrency_seat. A candidate
 * beyond its key's tokens is not leased: it stays PENDING, and its row lock ends with the statement.
 */
export function rateAdmission(passed: string): Sql {
  const p = raw(passed);
  return sqltag`rate_keyed AS (
        SELECT c.id, c.rate_key,
               row_number() OVER (PARTITION BY c.rate_key ORDER BY c.priority DESC, c.next_run_at, c.id) AS rn
          FROM ${p} c
         WHERE c.rate_key IS NOT NULL
      ),
      -- The keys' rows, locked in key order; a row a concurrent claim changed is read as committed.
      -- By primary key through an InitPlan array: a CTE's row estimate must not turn this into a scan of every key.
      rate_gate AS (
        SELECT r.key, floor(${tokensNow('r')})::int AS free FROM runledger.rate_limits r
         WHERE r.key = ANY (ARRAY(SELECT DISTINCT rate_key FROM rate_keyed))
         ORDER BY r.key
           FOR UPDATE
      ),
      admitted AS (
        SELECT c.id, c.ctid, c.concurrency_seat FROM ${p} c WHERE c.rate_key IS NULL
        UNION ALL
        SELECT c.id, c.ctid, c.concurrency_seat
          FROM ${p} c
          JOIN rate_keyed kd ON kd.id = c.id
          JOIN rate_gate g ON g.key = kd.rate_key AND kd.rn <= g.free
      )`;
}

/**
 * The claim's taking of tokens (`claimed`: the jobs it leased, with `rate_key`): the bucket refilled to now(),
 * less one per job leased, from what the claim wrote, not what it admitted. The rows are the admission's,
 * already locked. `refilled_at` never goes back: a claim whose now() is older than the row's refill (a long
 * host transaction) adds nothing and takes from what the row holds.
 */
export function takeRateTokens(claimed: string): Sql {
  const c = raw(claimed);
  return sqltag`tokens_taken AS (
        UPDATE runledger.rate_limits r
           SET tokens = GREATEST(${tokensNow('r')} - t.n, 0),
               refilled_at = GREATEST(r.refilled_at, now())
          FROM (SELECT rate_key, count(*)::int AS n FROM ${c} WHERE rate_key IS NOT NULL GROUP BY rate_key) t
         WHERE r.key = ANY (ARRAY(SELECT rate_key FROM ${c} WHERE rate_key IS NOT NULL)) AND r.key = t.rate_key
      )`;
}

/**
 * How long until one of `keys` has half of `want` whole tokens (at most its burst) while due jobs of `jobTypes` wait
 * for it: the worker's wake-up after a short claim (src/worker/rate-wakes.ts); 0 when one has them already (the
 * tokens came while the claim ran). NULL: no key has jobs of these types waiting.
 */
export function rateWaitStatement(keys: readonly string[], jobTypes: readonly string[], want: number): Sql {
  return sqltag`
    -- Half the bucket (or of \`want\`): a claim that comes late still finds the bucket filling, not full and
    -- wasting its refill.
    SELECT min(GREATEST(ceil((GREATEST(ceil(LEAST(r.burst, ${want}::int) / 2.0), 1) - t.tokens) * r.period_ms / r.max_starts), 0))::float8 AS wait_ms
      FROM runledger.rate_limits r
     CROSS JOIN LATERAL (SELECT ${tokensNow('r')} AS tokens) t
     WHERE r.key = ANY (${[...keys]}::text[])
       AND EXISTS (SELECT 1 FROM runledger.job_queue jq
                    WHERE jq.claimable AND jq.rate_key = r.key AND jq.next_run_at <= now()
                      AND jq.job_type = ANY (${[...jobTypes]}::text[]))`;
}
