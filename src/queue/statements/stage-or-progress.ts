/**
 * A held lease's stage or progress, fenced at the lease clock (src/queue/stage.ts runs it).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { leaseFence, lockedLeaseAndClock, type LeaseName } from '../../db/fragments.js';
import { jsonParam } from '../../model/job-rows.js';
import type { JsonValue } from '../../model/json.js';

/** Sets the stage (`isStage`) or the progress of a held lease, with its event (an unchanged stage writes none). */
export function writeStageOrProgressStatement(l: LeaseName, isStage: boolean, stage: string | null, progress: JsonValue | null, eventId: string): Sql {
  return sqltag`
      WITH ${lockedLeaseAndClock(l, sqltag`, jq.stage AS previous_stage`)},
      written AS (
        UPDATE runledger.job_queue jq
           SET stage = CASE WHEN ${isStage}::boolean THEN ${stage}::text ELSE jq.stage END,
               progress = CASE WHEN ${isStage}::boolean THEN jq.progress ELSE ${jsonParam(progress)}::jsonb END,
               updated_at = c.at
          FROM clock c
         WHERE ${leaseFence(l, sqltag`c.at`)}
        RETURNING jq.id, jq.run_number, jq.attempt
      ),
      events AS (
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
        SELECT ${eventId}::uuid, w.id,
               CASE WHEN ${isStage}::boolean THEN 'STAGE_CHANGED' ELSE 'PROGRESS' END::runledger.job_event_type,
               w.run_number, w.attempt,
               CASE WHEN ${isStage}::boolean THEN jsonb_build_object('stage', ${stage}::text, 'previousStage', l.previous_stage)
                    ELSE ${jsonParam(progress)}::jsonb END
          FROM written w JOIN locked l ON l.id = w.id
         WHERE NOT ${isStage}::boolean OR l.previous_stage IS DISTINCT FROM ${stage}::text
      )
      SELECT id FROM written`;
}
