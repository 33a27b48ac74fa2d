-- A job knows its step, and edges cannot cross runs: both by schema.
--
-- 1. `job_queue.workflow_step_id`: set when a workflow step's job is inserted,
--    never changed. The completion path reads it from the job row it already
--    updates instead of probing workflow_steps (`EXISTS (... job_id = ...)`).
--    The two links agree both ways through composite foreign keys, checked at
--    commit (DEFERRABLE INITIALLY DEFERRED) because a released step's job and
--    the step's `job_id` are written by one statement or transaction:
--      workflow_steps (job_id, id)        -> job_queue (id, workflow_step_id)
--      job_queue (workflow_step_id, id)   -> workflow_steps (id, job_id)
--    A NULL on either side (a direct job; a step not yet released) is not
--    checked (MATCH SIMPLE). Deleting a step (its run) deletes its job. One
--    job per step needs no index of its own: a job naming step s must match
--    s's single job_id. (Every index on job_queue costs each claim and each
--    completion, which are not HOT updates.)
-- 2. Edges reference (run, step) on both ends, so an edge whose steps belong to
--    another run cannot be stored; the runtime check stays as defence in depth.
-- 3. `uuid_v7()`: ids for rows that a set-based statement creates (the jobs of
--    released dependents), in the same format as the library's own UUIDv7 ids.
--    PostgreSQL 18 has uuidv7(); 14-17 do not.

ALTER TABLE "runledger"."job_queue" ADD COLUMN "workflow_step_id" UUID;

UPDATE "runledger"."job_queue" jq
   SET "workflow_step_id" = ws."id"
  FROM "runledger"."workflow_steps" ws
 WHERE ws."job_id" = jq."id";

CREATE UNIQUE INDEX "job_queue_workflow_step_id_id_key" ON "runledger"."job_queue" ("workflow_step_id", "id");
CREATE UNIQUE INDEX "workflow_steps_id_job_id_key" ON "runledger"."workflow_steps" ("id", "job_id");
CREATE UNIQUE INDEX "workflow_steps_run_id_id_key" ON "runledger"."workflow_steps" ("workflow_run_id", "id");

ALTER TABLE "runledger"."workflow_steps" ADD CONSTRAINT "workflow_steps_job_link_fkey"
    FOREIGN KEY ("job_id", "id") REFERENCES "runledger"."job_queue"("id", "workflow_step_id")
    ON DELETE NO ACTION ON UPDATE NO ACTION DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE "runledger"."job_queue" ADD CONSTRAINT "job_queue_workflow_step_link_fkey"
    FOREIGN KEY ("workflow_step_id", "id") REFERENCES "runledger"."workflow_steps"("id", "job_id")
    ON DELETE CASCADE ON UPDATE NO ACTION DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE "runledger"."workflow_step_dependencies" DROP CONSTRAINT "workflow_step_dependencies_prerequisite_step_id_fkey";
ALTER TABLE "runledger"."workflow_step_dependencies" DROP CONSTRAINT "workflow_step_dependencies_dependent_step_id_fkey";
ALTER TABLE "runledger"."workflow_step_dependencies" ADD CONSTRAINT "workflow_step_dependencies_prerequisite_fkey"
    FOREIGN KEY ("workflow_run_id", "prerequisite_step_id") REFERENCES "runledger"."workflow_steps"("workflow_run_id", "id")
    ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "runledger"."workflow_step_dependencies" ADD CONSTRAINT "workflow_step_dependencies_dependent_fkey"
    FOREIGN KEY ("workflow_run_id", "dependent_step_id") REFERENCES "runledger"."workflow_steps"("workflow_run_id", "id")
    ON DELETE CASCADE ON UPDATE CASCADE;

-- 48-bit millisecond timestamp, version 7, variant and random bits from gen_random_uuid() (core since 13).
CREATE FUNCTION "runledger"."uuid_v7"() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;

-- 4. The untyped claim's index carries a predicate (`priority IS NOT NULL`,
--    always true) that only the untyped claim states, so the typed claim can
--    never pick it: with another type's backlog ahead of the wanted type in
--    priority order, the planner (which cannot know that correlation) chose
--    it and filtered job_type row by row, reading the whole backlog on every
--    claim. The typed claim now always scans job_queue_claim_by_type_idx.
DROP INDEX "runledger"."job_queue_claim_idx";
CREATE INDEX "job_queue_claim_idx" ON "runledger"."job_queue" ("priority" DESC, "next_run_at", "id")
    WHERE "status" = 'PENDING' AND "priority" IS NOT NULL;
