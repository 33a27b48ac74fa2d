-- Concurrency keys without a lock shared by claims and lease ends (issue 35's throughput target).
--
-- A key's row counted its live leases: claims added to it and every statement that ended a keyed lease
-- subtracted from it, both under the row's lock, so a worker's claim queued behind another worker's completion
-- batch for the length of its commit whenever they shared a key (Lock:transactionid waits on both sides). Now
-- two counters that only grow, on two rows: claims add the leases they take to `taken` on the key's row (still
-- locked in key order by claims, which must read each other's counts exact), and lease ends add the leases
-- they end to `released` on the key's row of `concurrency_releases`, which no claim locks. Live leases =
-- taken - released. A claim reads `released` from its statement's snapshot: a count a concurrent end has not
-- committed yet is missing from it, so the claim sees fewer free slots than there are, never more.
ALTER TABLE "runledger"."concurrency_limits" RENAME COLUMN "leased" TO "taken";
ALTER TABLE "runledger"."concurrency_limits" ALTER COLUMN "taken" TYPE bigint;
ALTER TABLE "runledger"."concurrency_limits" RENAME CONSTRAINT "concurrency_limits_leased_check" TO "concurrency_limits_taken_check";

CREATE TABLE "runledger"."concurrency_releases" (
    "key" text NOT NULL,
    "released" bigint NOT NULL DEFAULT 0,
    CONSTRAINT "concurrency_releases_pkey" PRIMARY KEY ("key"),
    CONSTRAINT "concurrency_releases_released_check" CHECK ("released" >= 0)
) WITH (fillfactor = 50);

-- Each key's limit and live leases, as the readers (metrics, listConcurrencyLimits, the dashboard,
-- verifyIntegrity) show them.
CREATE VIEW "runledger"."concurrency_slots" AS
SELECT k."key", k."max_leased", (k."taken" - COALESCE(r."released", 0))::integer AS "leased", k."set_by", k."updated_at"
  FROM "runledger"."concurrency_limits" k
  LEFT JOIN "runledger"."concurrency_releases" r ON r."key" = k."key";

-- The claim's snapshot test (migration 20270101000000), on the two counters.
CREATE OR REPLACE FUNCTION "runledger"."concurrency_open"(p_key text, p_id uuid, p_claim_limit integer) RETURNS boolean
    LANGUAGE plpgsql STABLE COST 1 AS $$
DECLARE
    free integer;
BEGIN
    SELECT c.max_leased - (c.taken - COALESCE((SELECT r.released FROM runledger.concurrency_releases r WHERE r.key = p_key), 0))
      INTO free FROM runledger.concurrency_limits c WHERE c.key = p_key;
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
  'One row per concurrency key (migrations 20270101000000, 20270101000005): its limit and the leases claims took of it (taken, never lowered). Written by enqueue (the limit, unless set_by = operator), setConcurrencyLimit and the claim (+ taken). Lock order: after job rows and lease rows, in key order; claims only.';
COMMENT ON TABLE "runledger"."concurrency_releases" IS
  'One row per concurrency key a lease of which ended (migration 20270101000005): the leases ended (never lowered). Written by every statement that deletes a keyed lease row, in key order; no claim locks it. Live leases = concurrency_limits.taken - released (view concurrency_slots).';
COMMENT ON VIEW "runledger"."concurrency_slots" IS
  'Each concurrency key''s limit and live leases (taken - released): what metrics, listConcurrencyLimits, the dashboard and verifyIntegrity read.';
