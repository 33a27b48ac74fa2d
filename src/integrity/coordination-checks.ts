/**
 * Integrity checks over one page of runs for the coordination tables
 * (active-keys.ts, append.ts): one read-only statement whatever the page
 * size. Claims and mutations are reached by their primary keys (run id
 * first); other claims of a key through the partial unique index on
 * (scope, active_key) WHERE released_at IS NULL; a mutation's steps through
 * (workflow_run_id, step_key) and their edges through the dependent index.
 *
 * Active keys. A claim's scope follows from its run's organization
 * ('global' or 'organization:<id>'); at most one unreleased claim per
 * (scope, key) (the unique index says so; the check catches a dropped or
 * bypassed index); a claim is released only once its run is terminal and
 * every canceled lease of the run had run out (quiesced) at release.
 * A claim still held for a run that has been terminal and quiesced for longer
 * than ACTIVE_KEY_RELEASE_GRACE_MS is reported as overdue: correctness does
 * not depend on it (the next enqueue of the key releases it itself), but it
 * means no reaper has swept for a long while, and readers see a run holding a
 * key it no longer uses.
 *
 * Mutations. A mutation row's step_count is the number of steps its stored
 * request appended, each of them is a step of the run, and the edges into
 * those steps are exactly the request's edges (appended steps never gain
 * prerequisites later, and no other writer adds edges to them).
 */
import type { Tx } from '../client/types.js';
import type { ViolationRow } from './violations.js';
import { TERMINAL_RUN } from '../db/fragments.js';

/** Four of the worker's default reaper intervals (15 s): a sweep has certainly been missed by then. */
export const ACTIVE_KEY_RELEASE_GRACE_MS = 60_000;

export async function checkCoordination(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH claims AS MATERIALIZED (
      SELECT k.workflow_run_id, k.scope, k.active_key, k.released_at, r.status, r.finished_at,
             CASE WHEN r.organization_id IS NULL THEN 'global' ELSE 'organization:' || r.organization_id::text END AS expected_scope,
             r.status IN ${TERMINAL_RUN} AS terminal,
             leases.live_until
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_active_keys k ON k.workflow_run_id = page.id
        JOIN runledger.workflow_runs r ON r.id = k.workflow_run_id
        LEFT JOIN LATERAL (
          SELECT max(jq.lease_expires_at) AS live_until
            FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
           WHERE ws.workflow_run_id = r.id AND jq.status = 'CANCELED'
        ) leases ON true
    ),
    mutations AS MATERIALIZED (
      SELECT m.workflow_run_id, m.mutation_key, m.step_count, m.request,
             jsonb_array_length(CASE WHEN jsonb_typeof(m.request -> 'steps') = 'array' THEN m.request -> 'steps' ELSE '[]' END) AS requested,
             present.keys AS present_keys, present.missing AS missing_keys,
             COALESCE((
               SELECT jsonb_agg(jsonb_build_object('prerequisite', e.value ->> 'prerequisite', 'dependent', e.value ->> 'dependent',
                                                   'mode', upper(e.value ->> 'mode'))
                                ORDER BY e.value ->> 'dependent', e.value ->> 'prerequisite')
                 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.request -> 'edges') = 'array' THEN m.request -> 'edges' ELSE '[]' END) e(value)
             ), '[]'::jsonb) AS request_edges,
             COALESCE((
               SELECT jsonb_agg(jsonb_build_object('prerequisite', p.step_key, 'dependent', d.step_key, 'mode', dep.release_mode::text)
                                ORDER BY d.step_key, p.step_key)
                 FROM runledger.workflow_steps d
                 JOIN runledger.workflow_step_dependencies dep ON dep.dependent_step_id = d.id
                 JOIN runledger.workflow_steps p ON p.id = dep.prerequisite_step_id
                WHERE d.workflow_run_id = m.workflow_run_id AND d.step_key = ANY(present.keys)
             ), '[]'::jsonb) AS stored_edges
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_mutations m ON m.workflow_run_id = page.id
        LEFT JOIN LATERAL (
          SELECT array_agg(s.value ->> 'key' ORDER BY s.value ->> 'key') FILTER (WHERE ws.id IS NOT NULL) AS keys,
                 array_agg(s.value ->> 'key' ORDER BY s.value ->> 'key') FILTER (WHERE ws.id IS NULL) AS missing
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.request -> 'steps') = 'array' THEN m.request -> 'steps' ELSE '[]' END) s(value)
            LEFT JOIN runledger.workflow_steps ws ON ws.workflow_run_id = m.workflow_run_id AND ws.step_key = s.value ->> 'key'
        ) present ON true
    )
    SELECT 'active_key.scope_mismatch' AS kind, workflow_run_id, NULL::uuid AS step_id, NULL::text AS step_key, NULL::uuid AS job_id,
           jsonb_build_object('scope', expected_scope) AS expected,
           jsonb_build_object('scope', scope, 'activeKey', active_key) AS found
      FROM claims WHERE scope IS DISTINCT FROM expected_scope
    UNION ALL
    SELECT 'active_key.duplicate_claim', c.workflow_run_id, NULL, NULL, NULL,
           jsonb_build_object('unreleasedClaims', 1),
           jsonb_build_object('scope', c.scope, 'activeKey', c.active_key, 'otherWorkflowRunIds', to_jsonb(others.ids))
      FROM claims c
      JOIN LATERAL (
        SELECT array_agg(o.workflow_run_id ORDER BY o.workflow_run_id) AS ids
          FROM runledger.workflow_active_keys o
         WHERE o.scope = c.scope AND o.active_key = c.active_key AND o.released_at IS NULL AND o.workflow_run_id <> c.workflow_run_id
      ) others ON others.ids IS NOT NULL
     WHERE c.released_at IS NULL
    UNION ALL
    SELECT 'active_key.released_early', workflow_run_id, NULL, NULL, NULL,
           jsonb_build_object('runTerminal', true, 'canceledLeasesExpiredBy', released_at),
           jsonb_build_object('status', status, 'releasedAt', released_at, 'canceledLeaseExpiresAt', live_until)
      FROM claims
     WHERE released_at IS NOT NULL AND (NOT terminal OR live_until > released_at)
    UNION ALL
    SELECT 'active_key.release_overdue', workflow_run_id, NULL, NULL, NULL,
           jsonb_build_object('releasedAt', 'set', 'graceMs', ${ACTIVE_KEY_RELEASE_GRACE_MS}::int),
           jsonb_build_object('status', status, 'quiescedAt', greatest(finished_at, live_until), 'releasedAt', NULL)
      FROM claims
     WHERE released_at IS NULL AND terminal
       AND greatest(finished_at, live_until) < clock_timestamp() - ${ACTIVE_KEY_RELEASE_GRACE_MS}::int * interval '1 millisecond'
    UNION ALL
    SELECT 'mutation.step_count', workflow_run_id, NULL, NULL, NULL,
           jsonb_build_object('mutationKey', mutation_key, 'stepCount', requested, 'missingStepKeys', '[]'::jsonb),
           jsonb_build_object('mutationKey', mutation_key, 'stepCount', step_count, 'missingStepKeys', COALESCE(to_jsonb(missing_keys), '[]'::jsonb))
      FROM mutations
     WHERE step_count <> requested OR missing_keys IS NOT NULL
    UNION ALL
    SELECT 'mutation.edges', workflow_run_id, NULL, NULL, NULL,
           jsonb_build_object('mutationKey', mutation_key, 'edges', request_edges),
           jsonb_build_object('mutationKey', mutation_key, 'edges', stored_edges)
      FROM mutations
     WHERE request_edges <> stored_edges`;
}
