-- Leases in a table of their own (issue 34, second step of a HOT lifecycle; bench/README.md, "A lifecycle that
-- writes few index entries").
--
-- A completion (LEASED -> SUCCEEDED) can be a HOT update of job_queue only if no index of job_queue names a
-- column it changes. Three indexes named the lease: job_queue_lease_expiry_idx (the reaper's order and the
-- leased counts), job_queue_resource_leased_uidx (one lease per execution resource) and
-- job_queue_resource_quiescing_idx (a canceled keyed job holds its key until its lease runs out). Their reads
-- move to job_leases, one row per live lease, which the statement that writes the job row keeps in step (a
-- CTE of the same statement, src/queue/statements/lease-rows.ts): the claim inserts it; the completion,
-- failure, continuation, release and reaper delete it; the heartbeat moves its expiry; a cancellation marks
-- it canceled and the reaper deletes it once it has run out. job_queue keeps lease_owner and lease_expires_at,
-- unindexed: the lease fence reads the job row it locks, as before.
--
-- The table holds live leases only, so its size is the fleet's concurrency, not the history. Index entries:
-- the primary key on every insert and heartbeat; the resource index for keyed leases only; the quiescence
-- index for canceled leases only.
CREATE TABLE "runledger"."job_leases" (
    "expires_at" timestamptz(6) NOT NULL,
    "job_id" uuid NOT NULL,
    "resource_key" text,
    "canceled" boolean NOT NULL DEFAULT false,
    CONSTRAINT "job_leases_pkey" PRIMARY KEY ("expires_at", "job_id")
);
-- At most one live lease per execution resource key: a concurrent claim's race is refused here at insert
-- (src/queue/claim.ts recognizes the name and retries), as job_queue_resource_leased_uidx did.
CREATE UNIQUE INDEX "job_leases_resource_uidx" ON "runledger"."job_leases" ("resource_key")
    WHERE "resource_key" IS NOT NULL AND NOT "canceled";
-- A canceled keyed lease holds its key until it runs out (its handler may still run): resource_claimable()'s
-- third probe. Canceled rows only, so a claim or heartbeat writes no entry here.
CREATE INDEX "job_leases_quiescing_idx" ON "runledger"."job_leases" ("resource_key", "expires_at")
    WHERE "canceled" AND "resource_key" IS NOT NULL;

-- The leases live at migration time: every LEASED job's, and a canceled keyed job's still inside its lease
-- (the quiescence rule reads it). Read through the indexes about to go.
INSERT INTO "runledger"."job_leases" ("expires_at", "job_id", "resource_key", "canceled")
SELECT jq."lease_expires_at", jq."id", jq."resource_key", false
  FROM "runledger"."job_queue" jq
 WHERE jq."status" = 'LEASED' AND jq."lease_expires_at" IS NOT NULL
UNION ALL
SELECT jq."quiescing_until", jq."id", jq."resource_key", true
  FROM "runledger"."job_queue" jq
 WHERE jq."quiescing_until" IS NOT NULL AND jq."quiescing_until" > now();

-- The claim's execution-resource test, on the lease table: no live lease of the key, `p_id` the key's head,
-- no canceled lease of the key that has not run out.
CREATE OR REPLACE FUNCTION "runledger"."resource_claimable"(p_key text, p_id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE COST 1 AS $$
BEGIN
    RETURN NOT EXISTS (SELECT 1 FROM runledger.job_leases l WHERE l.resource_key = p_key AND NOT l.canceled)
       AND p_id = (SELECT h.id FROM runledger.job_queue h
                    WHERE h.resource_key = p_key AND h.claimable AND h.next_run_at <= now()
                    ORDER BY h.priority DESC, h.next_run_at, h.id
                    LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM runledger.job_leases q
                        WHERE q.resource_key = p_key AND q.canceled AND q.expires_at > now());
END
$$;

DROP INDEX "runledger"."job_queue_lease_expiry_idx";
DROP INDEX "runledger"."job_queue_resource_leased_uidx";
DROP INDEX "runledger"."job_queue_resource_quiescing_idx";
-- Their markers (migration 20261228000000) served only those indexes. Dropping a column rewrites nothing.
ALTER TABLE "runledger"."job_queue" DROP COLUMN "leased_resource_key", DROP COLUMN "quiescing_until";

COMMENT ON TABLE "runledger"."job_leases" IS
  'One row per live lease (migration 20261229000000): inserted by the claim, deleted by the completion, failure, continuation, release and reaper, moved by the heartbeat, marked canceled by a cancellation (deleted by the reaper once run out). Lock order: after its job row.';
COMMENT ON INDEX "runledger"."job_leases_pkey" IS
  'Hot: the reaper (expired leases oldest first), and every lifecycle write''s delete or move of its lease row by (expires_at, job_id) read from the job row.';
COMMENT ON INDEX "runledger"."job_leases_resource_uidx" IS
  'At most one live lease per execution resource key (a concurrent claim''s race is refused here), and resource_claimable()''s key-held probe. Keyed, not canceled rows only.';
COMMENT ON INDEX "runledger"."job_leases_quiescing_idx" IS
  'resource_claimable()''s probe for a canceled lease of the key that has not yet run out (its handler may still run). Keyed canceled rows only.';
