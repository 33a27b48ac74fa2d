-- Part 1. The job definitions catalog: one row per job type, written by
-- syncJobDefinitions (a worker at start, or `runledger definitions sync`).
-- `enabled` is the operator's switch: a sync inserts a new type enabled and
-- never changes it afterwards, so a restart does not undo a `disable`.
-- The defaults apply to workflow job steps (and by-name enqueues) that leave
-- a setting out (src/queue/definitions.ts). payload_schema is the payload's
-- JSON Schema when the definition's schema can produce one (zod 4), with its
-- sha256 in payload_schema_hash; both NULL otherwise.

CREATE TABLE "runledger"."job_definitions" (
    "job_type" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "default_priority" INTEGER NOT NULL DEFAULT 0,
    "default_max_attempts" INTEGER NOT NULL DEFAULT 5,
    "default_timeout_seconds" INTEGER NOT NULL DEFAULT 300,
    "backoff_base_ms" INTEGER NOT NULL DEFAULT 1000,
    "backoff_max_ms" INTEGER NOT NULL DEFAULT 3600000,
    "payload_schema" JSONB,
    "payload_schema_hash" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),

    CONSTRAINT "job_definitions_pkey" PRIMARY KEY ("job_type"),
    CONSTRAINT "job_definitions_job_type_valid" CHECK (btrim("job_type") <> '' AND char_length("job_type") <= 200),
    CONSTRAINT "job_definitions_max_attempts_positive" CHECK ("default_max_attempts" >= 1),
    CONSTRAINT "job_definitions_timeout_positive" CHECK ("default_timeout_seconds" >= 1),
    CONSTRAINT "job_definitions_backoff_valid" CHECK ("backoff_base_ms" >= 1 AND "backoff_base_ms" <= "backoff_max_ms"),
    CONSTRAINT "job_definitions_schema_hash_pair" CHECK (("payload_schema" IS NULL) = ("payload_schema_hash" IS NULL))
);

-- Part 2. Durable enqueue intents (src/queue/intents.ts): a request for a
-- job, recorded in the host's transaction without touching job_queue or the
-- catalog, and promoted to a job later by a worker whose type is registered
-- and enabled. PENDING -> PROMOTED (job_id names the job, new or the
-- idempotent existing one) or PENDING -> CONFLICT (the key holds a job made
-- from another request; the intent stays as evidence). A failed promotion
-- keeps the intent PENDING with attempts, last_error_* and a later
-- next_attempt_at: work is never dropped.
-- No foreign key to job_queue: retention may purge the job of a promoted
-- intent, and the intent is the host's record that the request was made.

CREATE TYPE "runledger"."job_enqueue_intent_state" AS ENUM ('PENDING', 'PROMOTED', 'CONFLICT');

CREATE TABLE "runledger"."job_enqueue_intents" (
    "id" UUID NOT NULL,
    "job_type" TEXT NOT NULL,
    "organization_id" TEXT,
    "idempotency_key" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "priority" INTEGER,
    "max_attempts" INTEGER,
    "timeout_seconds" INTEGER,
    "run_at" TIMESTAMPTZ(6),
    "resource_key" TEXT,
    "backoff_base_ms" INTEGER,
    "backoff_max_ms" INTEGER,
    "state" "runledger"."job_enqueue_intent_state" NOT NULL DEFAULT 'PENDING',
    "job_id" UUID,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error_code" TEXT,
    "last_error_message" TEXT,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "settled_at" TIMESTAMPTZ(6),

    CONSTRAINT "job_enqueue_intents_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "job_enqueue_intents_job_type_valid" CHECK (btrim("job_type") <> ''),
    CONSTRAINT "job_enqueue_intents_key_valid" CHECK (btrim("idempotency_key") <> '' AND octet_length("idempotency_key") <= 512),
    CONSTRAINT "job_enqueue_intents_attempts_nonnegative" CHECK ("attempts" >= 0),
    CONSTRAINT "job_enqueue_intents_state_shape" CHECK (
        ("state" = 'PENDING' AND "job_id" IS NULL AND "settled_at" IS NULL)
        OR ("state" = 'PROMOTED' AND "job_id" IS NOT NULL AND "settled_at" IS NOT NULL)
        OR ("state" = 'CONFLICT' AND "job_id" IS NOT NULL AND "settled_at" IS NOT NULL))
);

-- The promoter's probe (pending intents of given types, due, in id order) and
-- the stats read (oldest pending).
CREATE INDEX "job_enqueue_intents_pending_idx" ON "runledger"."job_enqueue_intents" ("job_type", "next_attempt_at", "id")
    WHERE "state" = 'PENDING';
CREATE INDEX "job_enqueue_intents_pending_age_idx" ON "runledger"."job_enqueue_intents" ("created_at")
    WHERE "state" = 'PENDING';
-- The integrity checker's probe from a job to the intents that name it.
CREATE INDEX "job_enqueue_intents_job_id_idx" ON "runledger"."job_enqueue_intents" ("job_id") WHERE "job_id" IS NOT NULL;
-- Conflict evidence, counted by getEnqueueIntentStats (rare rows: a small index).
CREATE INDEX "job_enqueue_intents_conflict_idx" ON "runledger"."job_enqueue_intents" ("created_at") WHERE "state" = 'CONFLICT';
