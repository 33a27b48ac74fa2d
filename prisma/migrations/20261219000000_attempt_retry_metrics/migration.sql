-- The dashboard's throughput chart counts, per minute of the last hour, the
-- attempts that failed and will be retried (src/dashboard/throughput.ts).
-- This partial index holds only attempts closed as FAILED_RETRY, by close
-- time, so the count reads its hour and nothing of the rest of the history.
--
-- Cost: one entry per retried failure, none on enqueue, claim or any other
-- close. Closing an attempt was already not a HOT update (finished_at and
-- outcome are columns of job_attempts_continued_idx), so this index changes
-- no other write.
CREATE INDEX IF NOT EXISTS "job_attempts_failed_retry_idx" ON "runledger"."job_attempts" ("finished_at") WHERE "outcome" = 'FAILED_RETRY';
