-- Runledger initial schema. Hand-written in Prisma's migration layout so that
-- `prisma migrate deploy` and runledger's own migrate() apply the same file.
-- Everything the Prisma schema language cannot express (CHECK constraints for
-- the state invariants, partial and expression indexes) lives here.

CREATE SCHEMA IF NOT EXISTS "runledger";

-- CreateEnum
CREATE TYPE "runledger"."job_status" AS ENUM ('PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED');
CREATE TYPE "runledger"."job_event_type" AS ENUM ('ENQUEUED', 'LEASED', 'RUNNING', 'RETRY_SCHEDULED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED', 'REQUEUED', 'LEASE_EXPIRED');
CREATE TYPE "runledger"."workflow_run_status" AS ENUM ('RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED');
CREATE TYPE "runledger"."workflow_step_status" AS ENUM ('BLOCKED', 'ENQUEUED', 'RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'FAILED', 'CANCELED');
CREATE TYPE "runledger"."workflow_step_execution_kind" AS ENUM ('JOB', 'EXTERNAL');
CREATE TYPE "runledger"."workflow_dependency_release_mode" AS ENUM ('ON_SUCCESS', 'ON_TERMINAL');

-- CreateTable
CREATE TABLE "runledger"."job_queue" (
    "id" UUID NOT NULL,
    "job_type" TEXT NOT NULL,
    "organization_id" UUID,
    "payload" JSONB NOT NULL,
    "status" "runledger"."job_status" NOT NULL DEFAULT 'PENDING',
    "priority" INTEGER NOT NULL DEFAULT 0,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "max_attempts" INTEGER NOT NULL DEFAULT 5,
    "run_number" INTEGER NOT NULL DEFAULT 1,
    "timeout_seconds" INTEGER NOT NULL DEFAULT 300,
    "next_run_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(6),
    "heartbeat_at" TIMESTAMPTZ(6),
    "idempotency_key" TEXT,
    "enqueue_request" JSONB,
    "progress" JSONB,
    "checkpoint" JSONB,
    "output" JSONB,
    "last_error_code" TEXT,
    "last_error_message" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(6),
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "job_queue_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "job_queue_job_type_not_blank" CHECK (btrim("job_type") <> ''),
    CONSTRAINT "job_queue_counters_valid" CHECK (
        "attempt" >= 0 AND "max_attempts" >= 1 AND "attempt" <= "max_attempts"
        AND "run_number" >= 1 AND "timeout_seconds" >= 1),
    -- A live lease has an owner and an expiry; nothing else has an owner. A
    -- CANCELED job may keep its expiry as the quiescence marker: a replacement
    -- must not start before a still-running handler's lease has run out.
    CONSTRAINT "job_queue_lease_columns" CHECK (
        ("status" = 'LEASED') = ("lease_owner" IS NOT NULL)
        AND ("status" <> 'LEASED' OR "lease_expires_at" IS NOT NULL)
        AND ("lease_expires_at" IS NULL OR "status" IN ('LEASED', 'CANCELED'))
        AND ("heartbeat_at" IS NULL OR "status" = 'LEASED')),
    CONSTRAINT "job_queue_output_only_on_success" CHECK ("output" IS NULL OR "status" = 'SUCCEEDED'),
    CONSTRAINT "job_queue_finished_iff_terminal" CHECK (
        ("finished_at" IS NOT NULL) = ("status" IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'))),
    CONSTRAINT "job_queue_idempotency_pair" CHECK (
        ("idempotency_key" IS NULL) = ("enqueue_request" IS NULL)
        AND ("idempotency_key" IS NULL OR (btrim("idempotency_key") <> '' AND octet_length("idempotency_key") <= 512)))
);

CREATE TABLE "runledger"."job_events" (
    "id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "event_type" "runledger"."job_event_type" NOT NULL,
    "run_number" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "payload" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "job_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "job_events_counters_valid" CHECK ("run_number" >= 1 AND "attempt" >= 0)
);

CREATE TABLE "runledger"."workflow_runs" (
    "id" UUID NOT NULL,
    "workflow_type" TEXT NOT NULL,
    "organization_id" UUID,
    "status" "runledger"."workflow_run_status" NOT NULL DEFAULT 'RUNNING',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "idempotency_key" TEXT,
    "enqueue_request" JSONB,
    "result_step_key" TEXT,
    "result" JSONB,
    "status_reason" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "workflow_runs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "workflow_runs_type_not_blank" CHECK (btrim("workflow_type") <> ''),
    CONSTRAINT "workflow_runs_result_only_on_success" CHECK ("result" IS NULL OR "status" = 'SUCCEEDED'),
    CONSTRAINT "workflow_runs_finished_iff_terminal" CHECK (
        ("finished_at" IS NOT NULL) = ("status" IN ('SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'))),
    CONSTRAINT "workflow_runs_idempotency_pair" CHECK (
        ("idempotency_key" IS NULL) = ("enqueue_request" IS NULL)
        AND ("idempotency_key" IS NULL OR (btrim("idempotency_key") <> '' AND octet_length("idempotency_key") <= 512)))
);

CREATE TABLE "runledger"."workflow_steps" (
    "id" UUID NOT NULL,
    "workflow_run_id" UUID NOT NULL,
    "step_key" TEXT NOT NULL,
    "execution_kind" "runledger"."workflow_step_execution_kind" NOT NULL,
    "job_type" TEXT,
    "organization_id" UUID,
    "payload" JSONB,
    "priority" INTEGER,
    "max_attempts" INTEGER,
    "timeout_seconds" INTEGER,
    "status" "runledger"."workflow_step_status" NOT NULL DEFAULT 'BLOCKED',
    "job_id" UUID,
    "released_at" TIMESTAMPTZ(6),
    "started_at" TIMESTAMPTZ(6),
    "finished_at" TIMESTAMPTZ(6),
    "dependency_count_total" INTEGER NOT NULL DEFAULT 0,
    "dependency_count_pending" INTEGER NOT NULL DEFAULT 0,
    "dependency_count_unsatisfied" INTEGER NOT NULL DEFAULT 0,
    "status_reason" TEXT,
    "last_error_code" TEXT,
    "last_error_message" TEXT,
    "output" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_steps_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "workflow_steps_step_key_not_blank" CHECK (btrim("step_key") <> ''),
    CONSTRAINT "workflow_steps_counters_valid" CHECK (
        "dependency_count_total" >= 0
        AND "dependency_count_pending" >= 0 AND "dependency_count_pending" <= "dependency_count_total"
        AND "dependency_count_unsatisfied" >= 0 AND "dependency_count_unsatisfied" <= "dependency_count_total"),
    -- Job settings exist exactly on JOB steps; an EXTERNAL step never has a job.
    CONSTRAINT "workflow_steps_kind_settings" CHECK (
        CASE "execution_kind"
            WHEN 'JOB' THEN "job_type" IS NOT NULL AND btrim("job_type") <> '' AND "payload" IS NOT NULL
            ELSE "job_type" IS NULL AND "payload" IS NULL AND "priority" IS NULL
                AND "max_attempts" IS NULL AND "timeout_seconds" IS NULL AND "job_id" IS NULL
        END),
    CONSTRAINT "workflow_steps_job_settings_valid" CHECK (
        ("max_attempts" IS NULL OR "max_attempts" >= 1) AND ("timeout_seconds" IS NULL OR "timeout_seconds" >= 1)),
    -- ENQUEUED and RUNNING mean "its job exists"; WAITING_FOR_EXTERNAL is for external steps only.
    CONSTRAINT "workflow_steps_status_kind" CHECK (
        ("status" NOT IN ('ENQUEUED', 'RUNNING') OR "job_id" IS NOT NULL)
        AND ("status" <> 'WAITING_FOR_EXTERNAL' OR "execution_kind" = 'EXTERNAL')),
    CONSTRAINT "workflow_steps_output_only_on_success" CHECK ("output" IS NULL OR "status" = 'SUCCEEDED'),
    CONSTRAINT "workflow_steps_finished_iff_terminal" CHECK (
        ("finished_at" IS NOT NULL) = ("status" IN ('SUCCEEDED', 'FAILED', 'CANCELED')))
);

CREATE TABLE "runledger"."workflow_step_dependencies" (
    "prerequisite_step_id" UUID NOT NULL,
    "dependent_step_id" UUID NOT NULL,
    "workflow_run_id" UUID NOT NULL,
    "release_mode" "runledger"."workflow_dependency_release_mode" NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_step_dependencies_pkey" PRIMARY KEY ("prerequisite_step_id", "dependent_step_id"),
    CONSTRAINT "workflow_step_dependencies_no_self_edge" CHECK ("prerequisite_step_id" <> "dependent_step_id")
);

CREATE TABLE "runledger"."job_replays" (
    "source_job_id" UUID NOT NULL,
    "source_run_number" INTEGER NOT NULL,
    "replay_request_key" TEXT NOT NULL,
    "replay_job_id" UUID NOT NULL,
    "reason" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "job_replays_pkey" PRIMARY KEY ("source_job_id", "source_run_number", "replay_request_key"),
    CONSTRAINT "job_replays_key_valid" CHECK (btrim("replay_request_key") <> '' AND octet_length("replay_request_key") <= 512),
    CONSTRAINT "job_replays_reason_not_blank" CHECK (btrim("reason") <> ''),
    CONSTRAINT "job_replays_not_self" CHECK ("source_job_id" <> "replay_job_id"),
    CONSTRAINT "job_replays_run_valid" CHECK ("source_run_number" >= 1)
);

-- CreateIndex
-- Claim: highest priority first, then the earliest due, among PENDING rows only.
CREATE INDEX "job_queue_claim_idx" ON "runledger"."job_queue" ("priority" DESC, "next_run_at", "id") WHERE "status" = 'PENDING';
CREATE INDEX "job_queue_claim_by_type_idx" ON "runledger"."job_queue" ("job_type", "priority" DESC, "next_run_at", "id") WHERE "status" = 'PENDING';
CREATE INDEX "job_queue_lease_expiry_idx" ON "runledger"."job_queue" ("lease_expires_at");
CREATE INDEX "job_queue_org_created_idx" ON "runledger"."job_queue" ("organization_id", "id" DESC);
-- Idempotency keys are scoped by (job type, organization); NULL organization is
-- the global scope, folded to the nil UUID so PostgreSQL 14 (no NULLS NOT
-- DISTINCT) still treats two global keys as equal.
CREATE UNIQUE INDEX "job_queue_idempotency_key_uidx" ON "runledger"."job_queue"
    ("job_type", COALESCE("organization_id", '00000000-0000-0000-0000-000000000000'::uuid), "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;

CREATE INDEX "job_events_job_idx" ON "runledger"."job_events" ("job_id", "id");

CREATE INDEX "workflow_runs_org_created_idx" ON "runledger"."workflow_runs" ("organization_id", "created_at" DESC, "id" DESC);
CREATE INDEX "workflow_runs_status_idx" ON "runledger"."workflow_runs" ("status");
CREATE UNIQUE INDEX "workflow_runs_idempotency_key_uidx" ON "runledger"."workflow_runs"
    ("workflow_type", COALESCE("organization_id", '00000000-0000-0000-0000-000000000000'::uuid), "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;

CREATE UNIQUE INDEX "workflow_steps_job_id_key" ON "runledger"."workflow_steps" ("job_id");
CREATE UNIQUE INDEX "workflow_steps_run_key_key" ON "runledger"."workflow_steps" ("workflow_run_id", "step_key");

CREATE INDEX "workflow_step_dependencies_dependent_idx" ON "runledger"."workflow_step_dependencies" ("dependent_step_id");
CREATE INDEX "workflow_step_dependencies_run_idx" ON "runledger"."workflow_step_dependencies" ("workflow_run_id");

CREATE UNIQUE INDEX "job_replays_replay_job_id_key" ON "runledger"."job_replays" ("replay_job_id");

-- AddForeignKey
-- Deleting a job deletes its audit trail.
ALTER TABLE "runledger"."job_events" ADD CONSTRAINT "job_events_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "runledger"."job_queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- Deleting a run deletes its steps and edges.
ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_workflow_run_id_fkey" FOREIGN KEY ("workflow_run_id") REFERENCES "runledger"."workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- A workflow step's job cannot be deleted from under it: the step->job link is authoritative.
ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "runledger"."job_queue"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "runledger"."workflow_step_dependencies" ADD CONSTRAINT "workflow_step_dependencies_workflow_run_id_fkey" FOREIGN KEY ("workflow_run_id") REFERENCES "runledger"."workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "runledger"."workflow_step_dependencies" ADD CONSTRAINT "workflow_step_dependencies_prerequisite_step_id_fkey" FOREIGN KEY ("prerequisite_step_id") REFERENCES "runledger"."workflow_steps"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "runledger"."workflow_step_dependencies" ADD CONSTRAINT "workflow_step_dependencies_dependent_step_id_fkey" FOREIGN KEY ("dependent_step_id") REFERENCES "runledger"."workflow_steps"("id") ON DELETE CASCADE ON UPDATE CASCADE;
-- Deleting a replay source deletes its lineage; a replay job cannot be deleted alone while its lineage exists.
ALTER TABLE "runledger"."job_replays" ADD CONSTRAINT "job_replays_source_job_id_fkey" FOREIGN KEY ("source_job_id") REFERENCES "runledger"."job_queue"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "runledger"."job_replays" ADD CONSTRAINT "job_replays_replay_job_id_fkey" FOREIGN KEY ("replay_job_id") REFERENCES "runledger"."job_queue"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
