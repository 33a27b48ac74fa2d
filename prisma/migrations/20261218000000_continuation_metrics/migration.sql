-- getQueueMetrics counts the slices that ended in a continuation in the last
-- hour (src/metrics/queries.ts): this partial index holds only attempts closed
-- as CONTINUED, by close time, so the count reads its window and nothing of
-- the rest of the attempt history. It costs one entry per continuation, and
-- nothing on any other transition.
CREATE INDEX IF NOT EXISTS "job_attempts_continued_idx" ON "runledger"."job_attempts" ("finished_at") WHERE "outcome" = 'CONTINUED';
