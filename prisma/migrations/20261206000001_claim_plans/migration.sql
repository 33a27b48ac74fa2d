-- The untyped claim's index needs a predicate that only the untyped claim
-- states (so a typed claim never picks it: see 20261201000000_job_step_link).
-- That predicate was `priority IS NOT NULL`, always true. PostgreSQL 17+
-- drops `IS NOT NULL` on a NOT NULL column from a query's conditions while
-- planning, so the query no longer implied the index predicate and the
-- untyped claim could not use the index at all: on PostgreSQL 18 every
-- untyped claim read and sorted every pending job. A range test on the
-- column is never folded away; -2147483648 is the smallest int, so this one
-- is as always-true as the old one.
DROP INDEX "runledger"."job_queue_claim_idx";
CREATE INDEX "job_queue_claim_idx" ON "runledger"."job_queue" ("priority" DESC, "next_run_at", "id")
    WHERE "status" = 'PENDING' AND "priority" >= -2147483648;

-- The claim's execution-resource condition (src/queue/claim.ts) as a function
-- the planner costs as one cheap opaque test. Written inline as scalar
-- subqueries it made PostgreSQL 18 cost every row as if each probed three
-- indexes and choose a sequential scan and sort of the whole pending backlog
-- over the ordered index scan, even for claims where no job has a key (the
-- `resource_key IS NULL` arm before it short-circuits those at run time).
-- STABLE: its queries read the calling statement's snapshot, exactly as the
-- subqueries did. True when no job of the key is LEASED, none is CANCELED
-- inside a lease that has not run out (its handler may still be running),
-- and `p_id` is the key's head: its first due PENDING job in claim order.
CREATE FUNCTION "runledger"."resource_claimable"(p_key text, p_id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE COST 1 AS $$
BEGIN
    RETURN NOT EXISTS (SELECT 1 FROM runledger.job_queue l WHERE l.resource_key = p_key AND l.status = 'LEASED')
       AND p_id = (SELECT h.id FROM runledger.job_queue h
                    WHERE h.resource_key = p_key AND h.status = 'PENDING' AND h.next_run_at <= now()
                    ORDER BY h.priority DESC, h.next_run_at, h.id
                    LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM runledger.job_queue q
                        WHERE q.resource_key = p_key AND q.status = 'CANCELED' AND q.lease_expires_at > now());
END
$$;
