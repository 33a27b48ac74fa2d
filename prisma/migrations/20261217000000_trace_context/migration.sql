-- OpenTelemetry trace context (W3C `traceparent` / `tracestate`, as the
-- propagator writes them) of the code that enqueued a job or a workflow run,
-- so a worker's span for the job continues the producer's trace. NULL when
-- the host has no OpenTelemetry API installed or no active trace: nothing to
-- carry. A workflow step's job reads its run's context at claim.

ALTER TABLE "runledger"."job_queue" ADD COLUMN "trace_context" JSONB;
ALTER TABLE "runledger"."workflow_runs" ADD COLUMN "trace_context" JSONB;
