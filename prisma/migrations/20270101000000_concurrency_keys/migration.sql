-- Concurrency keys (issue 35): at most `max_leased` live leases per key, across workers and processes.
--
-- A job names its key at enqueue (`concurrency: { key, limit }`, or its definition's); the key's row holds the
-- limit and the count of live leases holding it. The claim admits a key's candidates only up to its free
-- slots, counting them in the same statement (src/queue/statements/claim-jobs.ts), and every statement that
-- deletes a keyed lease row counts it back (src/queue/statements/lease-rows.ts). A counter rather than a count
-- of lease rows: a statement that waited for a concurrent claim's lock reads that claim's lease rows only
-- through the locked row itself, so the count must live on the row the claims lock.
CREATE TABLE "runledger"."concurrency_limits" (
    "key" text NOT NULL,
    "max_leased" integer NOT NULL,
    "leased" integer NOT NULL DEFAULT 0,
    -- 'enqueue': the last enqueue that named the key set the limit; 'operator': setConcurrencyLimit pinned it.
    "set_by" text NOT NULL DEFAULT 'enqueue',
    "updated_at" timestamptz(6) NOT NULL DEFAULT now(),
    CONSTRAINT "concurrency_limits_pkey" PRIMARY KEY ("key"),
    CONSTRAINT "concurrency_limits_max_leased_check" CHECK ("max_leased" BETWEEN 1 AND 100000),
    CONSTRAINT "concurrency_limits_leased_check" CHECK ("leased" >= 0),
    CONSTRAINT "concurrency_limits_set_by_check" CHECK ("set_by" IN ('enqueue', 'operator'))
) WITH (fillfactor = 50);

ALTER TABLE "runledger"."job_queue" ADD COLUMN "concurrency_key" text;
ALTER TABLE "runledger"."job_leases" ADD COLUMN "concurrency_key" text;
-- A workflow job step's key, copied to its job when the step is released (as its execution resource is); the
-- limit is written to the key's row when the run starts (or the step is appended).
ALTER TABLE "runledger"."workflow_steps" ADD COLUMN "concurrency_key" text;

-- A key's due jobs in claim order: the claim's test below (a key's first jobs), the waiting counts
-- (getQueueMetrics, listConcurrencyLimits). Keyed claimable rows only.
CREATE INDEX "job_queue_concurrency_waiting_idx" ON "runledger"."job_queue" ("concurrency_key", "priority" DESC, "next_run_at", "id")
    WHERE "claimable" AND "concurrency_key" IS NOT NULL;

-- The claim's snapshot test of a keyed candidate `p_id`: the key has a free slot, and the job is among the
-- key's first due jobs in claim order that the free slots can take (as an execution resource's head is its
-- first). So a full key's jobs, and a key's jobs beyond its free slots, take none of the claim's LIMIT. When a
-- claim of `p_claim_limit` jobs could not fill the free slots, any of the key's jobs may be a candidate (no
-- probe). The count on the locked row decides (src/queue/statements/concurrency-slots.ts); a key without a
-- row has no slot (enqueue writes the row). One primary-key probe, and at most `free` index entries read.
CREATE FUNCTION "runledger"."concurrency_open"(p_key text, p_id uuid, p_claim_limit integer) RETURNS boolean
    LANGUAGE plpgsql STABLE COST 1 AS $$
DECLARE
    free integer;
BEGIN
    SELECT c.max_leased - c.leased INTO free FROM runledger.concurrency_limits c WHERE c.key = p_key;
    IF free IS NULL OR free <= 0 THEN
        RETURN false;
    END IF;
    IF free >= p_claim_limit THEN
        RETURN true;
    END IF;
    RETURN p_id IN (SELECT h.id FROM runledger.job_queue h
                     WHERE h.concurrency_key = p_key AND h.claimable AND h.next_run_at <= now()
                     ORDER BY h.priority DESC, h.next_run_at, h.id
                     LIMIT free);
END
$$;

COMMENT ON TABLE "runledger"."concurrency_limits" IS
  'One row per concurrency key (migration 20270101000000): its limit and the live leases holding it. Written by enqueue (the limit, unless set_by = operator), setConcurrencyLimit, the claim (+ admitted) and every statement that deletes a keyed lease row (- ended). Lock order: after job rows and lease rows, in key order.';
COMMENT ON COLUMN "runledger"."job_queue"."concurrency_key" IS
  'Concurrency key (issue 35): at most concurrency_limits.max_leased LEASED jobs of the key at once. NULL: none.';
COMMENT ON COLUMN "runledger"."workflow_steps"."concurrency_key" IS
  'Concurrency key of the step''s job (issue 35), copied to the job when the step is released. NULL: none.';
COMMENT ON COLUMN "runledger"."job_leases"."concurrency_key" IS
  'The leased job''s concurrency key: the statement that deletes this row counts the slot back (concurrency_limits.leased).';
COMMENT ON INDEX "runledger"."job_queue_concurrency_waiting_idx" IS
  'Jobs waiting for a concurrency slot, per key (getQueueMetrics, dashboard). Keyed claimable rows only.';
