-- The HOT-lifecycle candidate of issue 34, on a copy of a migrated database, for bench/probes/index-entries.ts
-- to count what a drained job writes (bench/README.md, "A lifecycle that writes few index entries"). Not a
-- migration: the lease table and the counters are kept by a statement-level trigger standing in for the CTEs
-- the statements would carry (their rows and index entries count the same in the WAL), and the current
-- statements still name `status`, so the claim scans without its index (plans and time are not measured here).
--   createdb -T <migrated db> hot_c60 && psql -v ff=60 postgresql://.../hot_c60 -f bench/probes/hot-candidate.sql
-- What it changes: no index of job_queue names status, a lease column or finished_at. The claim indexes are
-- partial on `claimable` (generated from status: a completion, LEASED -> SUCCEEDED, leaves it NULL); leases,
-- the one-lease-per-resource rule and the reaper's order on job_leases (a row the claim inserts, the completion
-- deletes); finished counts per minute in job_counts (one upsert per batch and type); the rare finished
-- statuses (dead-lettered, canceled) by a generated column only they set; no index of SUCCEEDED rows (retention
-- and lists by the time-ordered primary key); fillfactor :ff.
SET search_path = runledger;
ALTER TABLE job_queue SET (fillfactor = :ff);
ALTER TABLE job_queue
  ADD COLUMN claimable boolean GENERATED ALWAYS AS (CASE WHEN status = 'PENDING' THEN true END) STORED,
  ADD COLUMN rare_finished_at timestamptz GENERATED ALWAYS AS (CASE WHEN status IN ('DEAD_LETTERED','CANCELED') THEN finished_at END) STORED;
DROP INDEX job_queue_claim_by_type_idx, job_queue_claim_idx, job_queue_resource_head_idx,
  job_queue_dead_letter_idx, job_queue_finished_direct_idx, job_queue_finished_status_idx, job_queue_finished_type_idx,
  job_queue_lease_expiry_idx, job_queue_resource_leased_uidx, job_queue_resource_quiescing_idx;
CREATE INDEX job_queue_claim_by_type_idx ON job_queue (job_type, priority DESC, next_run_at, id) INCLUDE (organization_id, workflow_step_id) WHERE claimable;
CREATE INDEX job_queue_claim_idx ON job_queue (priority DESC, next_run_at, id) WHERE claimable AND priority >= -2147483648;
CREATE INDEX job_queue_resource_head_idx ON job_queue (resource_key, priority DESC, next_run_at, id) WHERE claimable AND resource_key IS NOT NULL;
CREATE INDEX job_queue_rare_finished_idx ON job_queue (organization_id, job_type, rare_finished_at, id) WHERE rare_finished_at IS NOT NULL;
CREATE TABLE job_leases (job_id uuid PRIMARY KEY, expires_at timestamptz NOT NULL, resource_key text, canceled boolean NOT NULL DEFAULT false);
CREATE INDEX job_leases_expiry_idx ON job_leases (expires_at, job_id);
CREATE UNIQUE INDEX job_leases_resource_uidx ON job_leases (resource_key) WHERE resource_key IS NOT NULL AND NOT canceled;
CREATE TABLE job_counts (minute timestamptz, job_type text, status job_status, n bigint NOT NULL, run_ms double precision NOT NULL, PRIMARY KEY (minute, job_type, status));
CREATE FUNCTION job_queue_leases() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO runledger.job_leases (job_id, expires_at, resource_key)
    SELECT n.id, n.lease_expires_at, n.resource_key FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.status = 'LEASED' AND o.status <> 'LEASED';
  DELETE FROM runledger.job_leases l USING new_rows n, old_rows o
   WHERE l.job_id = n.id AND o.id = n.id AND o.status = 'LEASED' AND n.status <> 'LEASED';
  INSERT INTO runledger.job_counts AS c (minute, job_type, status, n, run_ms)
    SELECT date_trunc('minute', n.finished_at), n.job_type, n.status, count(*), sum(extract(epoch FROM n.finished_at - n.started_at) * 1000)
      FROM new_rows n JOIN old_rows o ON o.id = n.id
     WHERE n.finished_at IS NOT NULL AND o.finished_at IS NULL
     GROUP BY 1, 2, 3
  ON CONFLICT (minute, job_type, status) DO UPDATE SET n = c.n + excluded.n, run_ms = c.run_ms + excluded.run_ms;
  RETURN NULL;
END $$;
CREATE TRIGGER job_queue_leases AFTER UPDATE ON job_queue REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION job_queue_leases();
CREATE OR REPLACE FUNCTION resource_claimable(p_key text, p_id uuid) RETURNS boolean LANGUAGE plpgsql STABLE COST 1 AS $$
BEGIN
  RETURN NOT EXISTS (SELECT 1 FROM runledger.job_leases l WHERE l.resource_key = p_key AND (NOT l.canceled OR l.expires_at > now()))
     AND p_id = (SELECT h.id FROM runledger.job_queue h WHERE h.resource_key = p_key AND h.claimable AND h.next_run_at <= now()
                  ORDER BY h.priority DESC, h.next_run_at, h.id LIMIT 1);
END $$;
