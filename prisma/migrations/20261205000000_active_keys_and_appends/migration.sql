-- Active workflow keys and appends to running workflows.
--
-- 1. `workflow_active_keys`: "only one sync per customer at a time". One row
--    per run enqueued with an active key (kept after release, as history).
--    `scope` is 'global' or 'organization:<organization id>' (text, whatever
--    type organization ids have), so a key is claimed per organization or
--    globally. A key is claimed while `released_at` IS NULL, and at most one
--    run claims a (scope, key) at a time: the partial unique index. It is
--    released once its run is terminal and no canceled job of the run still
--    has a live lease (the quiescence marker on CANCELED jobs).
-- 2. `workflow_mutations`: one row per applied append, keyed by the caller's
--    mutation key within its run, with the canonical request it applied, so a
--    retried append is recognised (same request) or refused (different one).

CREATE TABLE "runledger"."workflow_active_keys" (
    "workflow_run_id" UUID NOT NULL,
    "scope" TEXT NOT NULL,
    "active_key" TEXT NOT NULL,
    "claimed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "released_at" TIMESTAMPTZ(6),

    CONSTRAINT "workflow_active_keys_pkey" PRIMARY KEY ("workflow_run_id"),
    CONSTRAINT "workflow_active_keys_scope_valid" CHECK ("scope" = 'global' OR ("scope" LIKE 'organization:%' AND length("scope") > 13)),
    CONSTRAINT "workflow_active_keys_key_valid" CHECK (btrim("active_key") <> '' AND octet_length("active_key") <= 512),
    CONSTRAINT "workflow_active_keys_release_after_claim" CHECK ("released_at" IS NULL OR "released_at" >= "claimed_at")
);

CREATE UNIQUE INDEX "workflow_active_keys_claimed_uidx" ON "runledger"."workflow_active_keys" ("scope", "active_key")
    WHERE "released_at" IS NULL;
-- The reaper's sweep: claims still held (few; the index stays small).
CREATE INDEX "workflow_active_keys_held_idx" ON "runledger"."workflow_active_keys" ("claimed_at", "workflow_run_id")
    WHERE "released_at" IS NULL;

ALTER TABLE "runledger"."workflow_active_keys" ADD CONSTRAINT "workflow_active_keys_workflow_run_id_fkey"
    FOREIGN KEY ("workflow_run_id") REFERENCES "runledger"."workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "runledger"."workflow_mutations" (
    "workflow_run_id" UUID NOT NULL,
    "mutation_key" TEXT NOT NULL,
    "request" JSONB NOT NULL,
    "step_count" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_mutations_pkey" PRIMARY KEY ("workflow_run_id", "mutation_key"),
    CONSTRAINT "workflow_mutations_key_valid" CHECK (btrim("mutation_key") <> '' AND octet_length("mutation_key") <= 512),
    CONSTRAINT "workflow_mutations_step_count_valid" CHECK ("step_count" >= 1)
);

ALTER TABLE "runledger"."workflow_mutations" ADD CONSTRAINT "workflow_mutations_workflow_run_id_fkey"
    FOREIGN KEY ("workflow_run_id") REFERENCES "runledger"."workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
