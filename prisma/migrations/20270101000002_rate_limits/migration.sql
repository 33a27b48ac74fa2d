-- Rate limits (issue 35): at most `max_starts` job starts per `period_ms` per key, on average, across workers
-- and processes; a job over the limit stays PENDING until its key has a token.
--
-- A token bucket per key: it holds at most `burst` tokens and gains `max_starts` per `period_ms`, continuously;
-- every lease (a start, retries included) takes one. So in any window of one period at most
-- max_starts + burst jobs start, and over time max_starts per period (docs/guide/flow-control.md says why a
-- bucket and not a window log). `tokens` is the count as of `refilled_at`: the claim refills it to its own
-- now() under the row's lock, admits at most its whole tokens, and subtracts the jobs it leased
-- (src/queue/statements/rate-slots.ts). Nothing gives a token back: a lease that ends early still started.
CREATE TABLE "runledger"."rate_limits" (
    "key" text NOT NULL,
    "max_starts" integer NOT NULL,
    "period_ms" integer NOT NULL,
    "burst" integer NOT NULL,
    "tokens" double precision NOT NULL,
    "refilled_at" timestamptz(6) NOT NULL DEFAULT now(),
    -- 'enqueue': the last enqueue that named the key set the limit; 'operator': setRateLimit pinned it.
    "set_by" text NOT NULL DEFAULT 'enqueue',
    "updated_at" timestamptz(6) NOT NULL DEFAULT now(),
    CONSTRAINT "rate_limits_pkey" PRIMARY KEY ("key"),
    CONSTRAINT "rate_limits_max_starts_check" CHECK ("max_starts" BETWEEN 1 AND 1000000),
    CONSTRAINT "rate_limits_period_ms_check" CHECK ("period_ms" BETWEEN 1 AND 604800000),
    CONSTRAINT "rate_limits_burst_check" CHECK ("burst" BETWEEN 1 AND 1000000),
    CONSTRAINT "rate_limits_tokens_check" CHECK ("tokens" >= 0 AND "tokens" <= "burst"),
    CONSTRAINT "rate_limits_set_by_check" CHECK ("set_by" IN ('enqueue', 'operator'))
) WITH (fillfactor = 50);

ALTER TABLE "runledger"."job_queue" ADD COLUMN "rate_key" text;
-- A workflow job step's key, copied to its job when the step is released (as its concurrency key is).
ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "rate_key" text;

-- A key's due jobs in claim order: the claim's test below (a key's first jobs), the waiting counts.
CREATE INDEX "job_queue_rate_waiting_idx" ON "runledger"."job_queue" ("rate_key", "priority" DESC, "next_run_at", "id")
    WHERE "claimable" AND "rate_key" IS NOT NULL;

-- A key's whole tokens at `p_at` (the bucket refilled to that time, never past `burst`; a time before
-- `refilled_at` adds nothing).
CREATE FUNCTION "runledger"."rate_tokens"(p_tokens double precision, p_refilled_at timestamptz, p_at timestamptz,
                                          p_max_starts integer, p_period_ms integer, p_burst integer)
    RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT LEAST(p_burst::double precision,
               p_tokens + GREATEST(extract(epoch FROM p_at - p_refilled_at)::double precision * 1000, 0)
                          * p_max_starts / p_period_ms)
$$;

-- The claim's snapshot test of a rate-limited candidate `p_id`: the key has a whole token now, and the job is
-- among the key's first due jobs in claim order that its tokens can take. So a key's jobs beyond its tokens
-- take none of the claim's LIMIT; the tokens on the locked row decide. A key without a row has no token
-- (enqueue writes the row). One primary-key probe, and at most `free` index entries read.
CREATE FUNCTION "runledger"."rate_open"(p_key text, p_id uuid, p_claim_limit integer) RETURNS boolean
    LANGUAGE plpgsql STABLE COST 1 AS $$
DECLARE
    free integer;
BEGIN
    SELECT floor(runledger.rate_tokens(r.tokens, r.refilled_at, now(), r.max_starts, r.period_ms, r.burst))::integer
      INTO free FROM runledger.rate_limits r WHERE r.key = p_key;
    IF free IS NULL OR free <= 0 THEN
        RETURN false;
    END IF;
    IF free >= p_claim_limit THEN
        RETURN true;
    END IF;
    RETURN p_id IN (SELECT h.id FROM runledger.job_queue h
                     WHERE h.rate_key = p_key AND h.claimable AND h.next_run_at <= now()
                     ORDER BY h.priority DESC, h.next_run_at, h.id
                     LIMIT free);
END
$$;

COMMENT ON TABLE "runledger"."rate_limits" IS
  'One token bucket per rate key (migration 20270101000002): at most max_starts job starts per period_ms on average, burst at once. Written by enqueue (the limit, unless set_by = operator), setRateLimit, and the claim (tokens - leased). Lock order: after job rows and concurrency key rows, in key order.';
COMMENT ON COLUMN "runledger"."job_queue"."rate_key" IS
  'Rate key (issue 35): each lease takes a token of rate_limits.key; no token, no lease. NULL: none.';
COMMENT ON COLUMN "runledger"."workflow_steps"."rate_key" IS
  'Rate key of the step''s job (issue 35), copied to the job when the step is released. NULL: none.';
COMMENT ON INDEX "runledger"."job_queue_rate_waiting_idx" IS
  'Jobs waiting for a rate-limit token, per key (the claim''s test, getQueueMetrics). Keyed claimable rows only.';
