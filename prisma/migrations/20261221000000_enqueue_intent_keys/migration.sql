-- Enqueue intents are idempotent when they are recorded (src/queue/intents.ts):
-- at most one intent per (job type, organization, idempotency key), as in
-- job_queue. Recording the same request again returns that intent; another
-- request under the key is refused with `job.intent_idempotency_conflict`.
-- The record INSERT names this index in its ON CONFLICT clause, so two
-- transactions recording one key at once leave one intent: the second waits
-- for the first to commit and then reads it.
--
-- Intents recorded twice before this migration: the first of each key is kept
-- (ids are UUIDv7, in recording order) and the later ones are removed. Under
-- the new rule they would not exist: the same request would have returned the
-- first intent, and another request would have been refused (such a later
-- intent could only ever promote to the first one's job or conflict with it).
DELETE FROM "runledger"."job_enqueue_intents" later
 USING "runledger"."job_enqueue_intents" earlier
 WHERE earlier."job_type" = later."job_type"
   AND COALESCE(earlier."organization_id", '') = COALESCE(later."organization_id", '')
   AND earlier."idempotency_key" = later."idempotency_key"
   AND earlier."id" < later."id";

CREATE UNIQUE INDEX "job_enqueue_intents_key_idx" ON "runledger"."job_enqueue_intents"
    ("job_type", (COALESCE("organization_id", '')), "idempotency_key");
