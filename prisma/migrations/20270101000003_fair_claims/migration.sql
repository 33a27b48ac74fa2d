-- Fair claiming (issue 35): jobs that name a fairness key take turns with the other keys of their type, not
-- first-in-first-out across all of them, so one key's backlog cannot starve another key's trickle.
--
-- A fair job is kept out of the two claim indexes (their predicates gain `fair_key IS NULL`, a column no
-- lifecycle statement changes, so completions stay HOT-eligible) and sits in its own two partial indexes,
-- ordered by key first. The claim walks the open keys with one index probe each (runledger.fair_groups: a
-- loose index scan from the worker's cursor, wrapping around), takes each key's share of the claim in its
-- usual order, and interleaves the shares with the unkeyed jobs turn by turn (src/queue/statements/fair-turns.ts).
-- Cost: one probe per open key up to the claim's size, whatever each key's backlog.
--
-- Rebuilding the two claim indexes holds job_queue's writes for the length of two index builds over the
-- PENDING rows (the only rows they hold).
ALTER TABLE "runledger"."job_queue"
    ADD COLUMN "fair_key" text,
    ADD COLUMN "fair_weight" integer,
    ADD CONSTRAINT "job_queue_fair_weight_check"
        CHECK (("fair_key" IS NULL AND "fair_weight" IS NULL) OR ("fair_key" IS NOT NULL AND "fair_weight" BETWEEN 1 AND 1000));

DROP INDEX "runledger"."job_queue_claim_by_type_idx";
CREATE INDEX "job_queue_claim_by_type_idx" ON "runledger"."job_queue" ("job_type", "priority" DESC, "next_run_at", "id")
    INCLUDE ("organization_id", "workflow_step_id")
    WHERE "claimable" AND "fair_key" IS NULL;
-- The always-true priority range stays: only the untyped claim states it (migration 20261228000000).
DROP INDEX "runledger"."job_queue_claim_idx";
CREATE INDEX "job_queue_claim_idx" ON "runledger"."job_queue" ("priority" DESC, "next_run_at", "id")
    WHERE "claimable" AND "fair_key" IS NULL AND "priority" >= -2147483648;

-- Fair jobs by type, key, then claim order: the typed claim's walk over keys and each key's share, and the
-- PENDING counts by type (index-only, as job_queue_claim_by_type_idx serves them for the other jobs).
CREATE INDEX "job_queue_fair_by_type_idx" ON "runledger"."job_queue" ("job_type", "fair_key", "priority" DESC, "next_run_at", "id")
    INCLUDE ("organization_id", "workflow_step_id", "fair_weight")
    WHERE "claimable" AND "fair_key" IS NOT NULL;
-- The same for a claim of every type.
CREATE INDEX "job_queue_fair_idx" ON "runledger"."job_queue" ("fair_key", "priority" DESC, "next_run_at", "id")
    INCLUDE ("fair_weight")
    WHERE "claimable" AND "fair_key" IS NOT NULL;

-- The fairness keys of `p_type` (NULL: of every type) with a due job, at most `p_max`, in key order starting
-- after `p_after` and wrapping around to it (so consecutive claims of one worker visit every key in turn), each
-- with its next job's weight. One index probe per key with a due head job; a key whose head is not due yet
-- costs a second probe (is any of its jobs due?) and is passed over. A key's backlog is never read here. Keys
-- are non-blank, so '' is before every key.
CREATE FUNCTION "runledger"."fair_groups"(p_type text, p_after text, p_max integer)
    RETURNS TABLE (group_key text, group_weight integer)
    LANGUAGE plpgsql STABLE ROWS 10
    -- Its probes' generic plans: custom ones were re-planned on every call (0.3 ms a claim), as PL/pgSQL's
    -- plan cache found no cheaper generic plan for a parameter compared with `>`.
    SET plan_cache_mode = force_generic_plan
    AS $$
DECLARE
    k text := p_after;
    found_key text;
    found_weight integer;
    found_due timestamptz;
    wrapped boolean := false;
    n integer := 0;
BEGIN
    IF p_max < 1 THEN
        RETURN;
    END IF;
    LOOP
        found_key := NULL;
        IF p_type IS NULL THEN
            SELECT jq.fair_key, jq.fair_weight, jq.next_run_at INTO found_key, found_weight, found_due
              FROM runledger.job_queue jq
             WHERE jq.claimable AND jq.fair_key IS NOT NULL AND jq.fair_key > k
             ORDER BY jq.fair_key, jq.priority DESC, jq.next_run_at, jq.id
             LIMIT 1;
        ELSE
            SELECT jq.fair_key, jq.fair_weight, jq.next_run_at INTO found_key, found_weight, found_due
              FROM runledger.job_queue jq
             WHERE jq.claimable AND jq.fair_key IS NOT NULL AND jq.job_type = p_type AND jq.fair_key > k
             ORDER BY jq.job_type, jq.fair_key, jq.priority DESC, jq.next_run_at, jq.id
             LIMIT 1;
        END IF;
        IF found_key IS NULL THEN
            EXIT WHEN wrapped OR p_after = '';
            wrapped := true;
            k := '';
            CONTINUE;
        END IF;
        EXIT WHEN wrapped AND found_key > p_after;
        k := found_key;
        -- The head is the key's highest-priority job: a later one of a lower priority may be due already.
        IF found_due > now() AND NOT EXISTS (
               SELECT 1 FROM runledger.job_queue jq
                WHERE jq.claimable AND jq.fair_key IS NOT NULL AND jq.fair_key = found_key
                  AND (p_type IS NULL OR jq.job_type = p_type) AND jq.next_run_at <= now()) THEN
            CONTINUE;
        END IF;
        group_key := found_key;
        group_weight := found_weight;
        RETURN NEXT;
        n := n + 1;
        EXIT WHEN n >= p_max;
    END LOOP;
END
$$;

COMMENT ON COLUMN "runledger"."job_queue"."fair_key" IS
  'The fairness key: claims take turns between the keys of a type (migration 20270101000003); NULL: none.';
COMMENT ON COLUMN "runledger"."job_queue"."fair_weight" IS
  'Turns per round of the job''s fairness key (1..1000), read from the key''s next job; NULL without a key.';
COMMENT ON INDEX "runledger"."job_queue_fair_by_type_idx" IS
  'Fair PENDING jobs by type and key: the typed claim''s walk over keys and shares, PENDING counts (index-only).';
COMMENT ON INDEX "runledger"."job_queue_fair_idx" IS
  'Fair PENDING jobs by key: the untyped claim''s walk over keys and shares.';
COMMENT ON INDEX "runledger"."job_queue_claim_by_type_idx" IS
  'Hot: the typed claim (claimJobs with jobTypes: what createWorker sends), one ordered scan per type. Covering (organization_id, workflow_step_id included): getQueueMetrics'' live PENDING counts and the dashboard overview''s PENDING counts and oldest due job, index-only. Claimable rows without a fairness key only (fair ones: job_queue_fair_by_type_idx).';
COMMENT ON INDEX "runledger"."job_queue_claim_idx" IS
  'Hot: the untyped claim (claimJobs without jobTypes), one ordered scan; its predicate is stated only by that claim (migration 20261206000001). Also getQueueMetrics'' oldest runnable job (one probe per priority). Claimable rows without a fairness key only (fair ones: job_queue_fair_idx).';
