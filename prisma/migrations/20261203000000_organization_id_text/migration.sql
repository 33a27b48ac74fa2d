-- Organization ids are the host's own ids (cuid, text, integers as strings,
-- UUIDs), not only UUIDs: `organization_id` becomes text on every table that
-- carries it, bounded to 1..255 characters (what the library validates; the
-- CHECKs keep a direct INSERT from storing what the library would refuse).
--
-- The idempotency indexes fold a NULL organization (no organization) to a
-- sentinel so PostgreSQL 14 (no NULLS NOT DISTINCT) treats two keys without an
-- organization as equal. The sentinel was the nil UUID; it is now the empty
-- string, which the CHECKs make impossible as a real organization id. Those
-- expression indexes are dropped and recreated; the plain indexes on
-- organization_id (job_queue_org_created_idx, workflow_runs_org_created_idx)
-- are rebuilt by ALTER COLUMN ... TYPE itself.

DROP INDEX "runledger"."job_queue_idempotency_key_uidx";
DROP INDEX "runledger"."workflow_runs_idempotency_key_uidx";

ALTER TABLE "runledger"."job_queue" ALTER COLUMN "organization_id" TYPE TEXT USING "organization_id"::text;
ALTER TABLE "runledger"."workflow_runs" ALTER COLUMN "organization_id" TYPE TEXT USING "organization_id"::text;
ALTER TABLE "runledger"."workflow_steps" ALTER COLUMN "organization_id" TYPE TEXT USING "organization_id"::text;

ALTER TABLE "runledger"."job_queue" ADD CONSTRAINT "job_queue_organization_id_valid"
    CHECK (char_length("organization_id") BETWEEN 1 AND 255);
ALTER TABLE "runledger"."workflow_runs" ADD CONSTRAINT "workflow_runs_organization_id_valid"
    CHECK (char_length("organization_id") BETWEEN 1 AND 255);
ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_organization_id_valid"
    CHECK (char_length("organization_id") BETWEEN 1 AND 255);

CREATE UNIQUE INDEX "job_queue_idempotency_key_uidx" ON "runledger"."job_queue"
    ("job_type", COALESCE("organization_id", ''), "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;
CREATE UNIQUE INDEX "workflow_runs_idempotency_key_uidx" ON "runledger"."workflow_runs"
    ("workflow_type", COALESCE("organization_id", ''), "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;
