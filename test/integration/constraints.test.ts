/**
 * The state invariants hold in the database itself, not only in TypeScript:
 * each CHECK constraint rejects a row that breaks it, whoever writes it.
 */
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
let pool: pg.Pool;
beforeAll(() => {
  pool = db.newPool({ max: 2 });
});

type Row = Record<string, unknown>;

async function insert(table: string, row: Row): Promise<void> {
  const columns = Object.keys(row);
  const values = Object.values(row).map((v) => (v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v));
  const sql = `INSERT INTO runledger.${table} (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`;
  await pool.query(sql, values);
}

/** Inserts rows in one transaction: the job <-> step link is checked at commit (deferred foreign keys). */
async function insertTogether(rows: readonly [table: string, row: Row][]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const [table, row] of rows) {
      const columns = Object.keys(row);
      const values = Object.values(row).map((v) => (v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v));
      await client.query(
        `INSERT INTO runledger.${table} (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
        values,
      );
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

async function violation(table: string, row: Row): Promise<string | undefined> {
  try {
    await insert(table, row);
    return undefined;
  } catch (error) {
    const e = error as { code?: string; constraint?: string };
    expect(e.code).toBe('23514');
    return e.constraint;
  }
}

const job = (overrides: Row = {}): Row => ({ id: newId(), job_type: 'mail.send', payload: { to: 'a' }, ...overrides });
const leased = { status: 'LEASED', lease_owner: 'w1', lease_expires_at: new Date(Date.now() + 60_000), attempt: 1 };
const finished = { finished_at: new Date() };

describe('job_queue constraints', () => {
  it('accepts valid rows in every status', async () => {
    await insert('job_queue', job());
    await insert('job_queue', job(leased));
    await insert('job_queue', job({ status: 'SUCCEEDED', output: { ok: true }, ...finished }));
    await insert('job_queue', job({ status: 'DEAD_LETTERED', attempt: 5, ...finished }));
    await insert('job_queue', job({ status: 'CANCELED', lease_expires_at: new Date(), ...finished }));
    await insert('job_queue', job({ idempotency_key: 'k1', enqueue_request: { a: 1 } }));
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM runledger.job_queue');
    expect(rows[0]!.n).toBe(6);
  });

  it.each([
    ['a blank job type', job({ job_type: '  ' }), 'job_queue_job_type_not_blank'],
    ['a negative attempt', job({ attempt: -1 }), 'job_queue_counters_valid'],
    ['max attempts below 1', job({ max_attempts: 0 }), 'job_queue_counters_valid'],
    ['attempt above max attempts', job({ attempt: 6, max_attempts: 5 }), 'job_queue_counters_valid'],
    ['run number 0', job({ run_number: 0 }), 'job_queue_counters_valid'],
    ['timeout 0', job({ timeout_seconds: 0 }), 'job_queue_counters_valid'],
    ['a LEASED job without owner', job({ ...leased, lease_owner: null }), 'job_queue_lease_columns'],
    ['a LEASED job without expiry', job({ ...leased, lease_expires_at: null }), 'job_queue_lease_columns'],
    ['a PENDING job with a lease owner', job({ lease_owner: 'w1' }), 'job_queue_lease_columns'],
    ['a PENDING job with a lease expiry', job({ lease_expires_at: new Date() }), 'job_queue_lease_columns'],
    ['a SUCCEEDED job with a lease expiry', job({ status: 'SUCCEEDED', lease_expires_at: new Date(), ...finished }), 'job_queue_lease_columns'],
    ['a heartbeat outside a lease', job({ heartbeat_at: new Date() }), 'job_queue_lease_columns'],
    ['output on a non-succeeded job', job({ status: 'DEAD_LETTERED', output: { x: 1 }, ...finished }), 'job_queue_output_only_on_success'],
    ['output on a pending job', job({ output: { x: 1 } }), 'job_queue_output_only_on_success'],
    ['a terminal job without finished_at', job({ status: 'SUCCEEDED' }), 'job_queue_finished_iff_terminal'],
    ['a pending job with finished_at', job({ ...finished }), 'job_queue_finished_iff_terminal'],
    ['a key without its canonical request', job({ idempotency_key: 'k' }), 'job_queue_idempotency_pair'],
    ['a canonical request without a key', job({ enqueue_request: {} }), 'job_queue_idempotency_pair'],
    ['a key over 512 bytes', job({ idempotency_key: 'é'.repeat(257), enqueue_request: {} }), 'job_queue_idempotency_pair'],
  ])('rejects %s', async (_name, row, constraint) => {
    expect(await violation('job_queue', row)).toBe(constraint);
  });

  it('rejects a second job with the same idempotency key in the same (type, organization), globals included', async () => {
    const org = newId();
    await insert('job_queue', job({ idempotency_key: 'dup', enqueue_request: {} }));
    await insert('job_queue', job({ idempotency_key: 'dup', enqueue_request: {}, organization_id: org }));
    await insert('job_queue', job({ idempotency_key: 'dup', enqueue_request: {}, job_type: 'other.type' }));
    for (const organization_id of [null, org]) {
      const error = await insert('job_queue', job({ idempotency_key: 'dup', enqueue_request: {}, organization_id })).catch(
        (e: { code: string; constraint: string }) => e,
      );
      expect(error).toMatchObject({ code: '23505', constraint: 'job_queue_idempotency_key_uidx' });
    }
  });
});

describe('job_events', () => {
  it('are deleted with their jobs, and only theirs', async () => {
    const [a, b, keep] = [newId(), newId(), newId()];
    for (const id of [a, b, keep]) {
      await insert('job_queue', job({ id }));
      await insert('job_events', { id: newId(), job_id: id, event_type: 'ENQUEUED', run_number: 1, attempt: 0 });
      await insert('job_events', { id: newId(), job_id: id, event_type: 'LEASED', run_number: 1, attempt: 1 });
    }
    await pool.query('DELETE FROM runledger.job_queue WHERE id = ANY($1::uuid[])', [[a, b]]);
    const { rows } = await pool.query<{ job_id: string; n: number }>(
      'SELECT job_id, count(*)::int AS n FROM runledger.job_events WHERE job_id = ANY($1::uuid[]) GROUP BY job_id',
      [[a, b, keep]],
    );
    expect(rows).toEqual([{ job_id: keep, n: 2 }]);
  });
});

describe('workflow constraints', () => {
  const run = (overrides: Row = {}): Row => ({ id: newId(), workflow_type: 'wf', ...overrides });
  let runId: string;
  beforeAll(async () => {
    runId = newId();
    await insert('workflow_runs', { id: runId, workflow_type: 'wf' });
  });
  const step = (overrides: Row = {}): Row => ({
    id: newId(),
    workflow_run_id: runId,
    step_key: `s-${newId()}`,
    execution_kind: 'JOB',
    job_type: 'x.y',
    payload: {},
    ...overrides,
  });
  const external = (overrides: Row = {}): Row => step({ execution_kind: 'EXTERNAL', job_type: null, payload: null, ...overrides });

  it.each([
    ['a blank workflow type', () => run({ workflow_type: '' }), 'workflow_runs_type_not_blank'],
    ['a result on a running run', () => run({ result: { x: 1 } }), 'workflow_runs_result_only_on_success'],
    ['a terminal run without finished_at', () => run({ status: 'SUCCEEDED' }), 'workflow_runs_finished_iff_terminal'],
    ['a key without canonical request', () => run({ idempotency_key: 'k' }), 'workflow_runs_idempotency_pair'],
  ])('rejects a run with %s', async (_name, row, constraint) => {
    expect(await violation('workflow_runs', row())).toBe(constraint);
  });

  it.each([
    ['a negative pending counter', () => step({ dependency_count_total: 1, dependency_count_pending: -1 }), 'workflow_steps_counters_valid'],
    ['pending above total', () => step({ dependency_count_total: 1, dependency_count_pending: 2 }), 'workflow_steps_counters_valid'],
    [
      'unsatisfied above total',
      () => step({ dependency_count_total: 1, dependency_count_pending: 1, dependency_count_unsatisfied: 2 }),
      'workflow_steps_counters_valid',
    ],
    ['a negative total', () => step({ dependency_count_total: -1 }), 'workflow_steps_counters_valid'],
    ['a blank step key', () => step({ step_key: ' ' }), 'workflow_steps_step_key_not_blank'],
    ['a job step without job type', () => step({ job_type: null }), 'workflow_steps_kind_settings'],
    ['a job step without payload', () => step({ payload: null }), 'workflow_steps_kind_settings'],
    ['an external step with job settings', () => external({ priority: 3 }), 'workflow_steps_kind_settings'],
    ['an external step with a job type', () => external({ job_type: 'x.y' }), 'workflow_steps_kind_settings'],
    ['max attempts 0', () => step({ max_attempts: 0 }), 'workflow_steps_job_settings_valid'],
    ['an ENQUEUED step without job', () => step({ status: 'ENQUEUED' }), 'workflow_steps_status_kind'],
    ['a job step WAITING_FOR_EXTERNAL', () => step({ status: 'WAITING_FOR_EXTERNAL' }), 'workflow_steps_status_kind'],
    ['output on a failed step', () => step({ status: 'FAILED', output: {}, finished_at: new Date() }), 'workflow_steps_output_only_on_success'],
    ['a terminal step without finished_at', () => external({ status: 'CANCELED' }), 'workflow_steps_finished_iff_terminal'],
  ])('rejects a step with %s', async (_name, row, constraint) => {
    expect(await violation('workflow_steps', row())).toBe(constraint);
  });

  it('rejects a self-dependency', async () => {
    const s = step();
    await insert('workflow_steps', s);
    expect(
      await violation('workflow_step_dependencies', {
        prerequisite_step_id: s.id,
        dependent_step_id: s.id,
        workflow_run_id: runId,
        release_mode: 'ON_SUCCESS',
      }),
    ).toBe('workflow_step_dependencies_no_self_edge');
  });

  it('keeps a step job from being deleted alone and deletes steps, edges and step jobs with their run', async () => {
    const ownRun = newId();
    await insert('workflow_runs', { id: ownRun, workflow_type: 'wf' });
    const jobId = newId();
    const a = step({ status: 'ENQUEUED', job_id: jobId, workflow_run_id: ownRun });
    const b = step({ dependency_count_total: 1, dependency_count_pending: 1, workflow_run_id: ownRun });
    await insertTogether([
      ['job_queue', job({ id: jobId, workflow_step_id: a.id })],
      ['workflow_steps', a],
    ]);
    await insert('workflow_steps', b);
    await insert('workflow_step_dependencies', { prerequisite_step_id: a.id, dependent_step_id: b.id, workflow_run_id: ownRun, release_mode: 'ON_SUCCESS' });
    const error = await pool.query('DELETE FROM runledger.job_queue WHERE id = $1', [jobId]).catch((e: { code: string }) => e);
    // PostgreSQL 18 reports ON DELETE RESTRICT as 23001, earlier versions as 23503.
    expect(error).toMatchObject({ constraint: 'workflow_steps_job_id_fkey' });
    expect(['23001', '23503']).toContain((error as { code: string }).code);
    await pool.query('DELETE FROM runledger.workflow_runs WHERE id = $1', [ownRun]);
    const { rows } = await pool.query<{ steps: number; edges: number; jobs: number }>(
      `SELECT (SELECT count(*)::int FROM runledger.workflow_steps WHERE workflow_run_id = $1) AS steps,
              (SELECT count(*)::int FROM runledger.workflow_step_dependencies WHERE workflow_run_id = $1) AS edges,
              (SELECT count(*)::int FROM runledger.job_queue WHERE id = $2) AS jobs`,
      [ownRun, jobId],
    );
    expect(rows[0]).toEqual({ steps: 0, edges: 0, jobs: 0 });
  });

  it('keeps the job <-> step link consistent both ways', async () => {
    const jobId = newId();
    const other = newId();
    const a = step({ status: 'ENQUEUED', job_id: jobId });
    // The step names the job, but the job names no step (or another one): refused at commit.
    const oneWay = await insertTogether([
      ['job_queue', job({ id: jobId })],
      ['workflow_steps', a],
    ]).catch((e: { code: string; constraint: string }) => e);
    expect(oneWay).toMatchObject({ code: '23503', constraint: 'workflow_steps_job_link_fkey' });
    const s = step();
    const dangling = await insertTogether([
      ['workflow_steps', s],
      ['job_queue', job({ id: other, workflow_step_id: s.id })],
    ]).catch((e: { code: string; constraint: string }) => e);
    expect(dangling).toMatchObject({ code: '23503', constraint: 'job_queue_workflow_step_link_fkey' });
  });

  it('refuses an edge whose steps belong to another run', async () => {
    const otherRun = newId();
    await insert('workflow_runs', { id: otherRun, workflow_type: 'wf' });
    const mine = step();
    const theirs = step({ workflow_run_id: otherRun });
    await insert('workflow_steps', mine);
    await insert('workflow_steps', theirs);
    const error = await insert('workflow_step_dependencies', {
      prerequisite_step_id: mine.id,
      dependent_step_id: theirs.id,
      workflow_run_id: runId,
      release_mode: 'ON_SUCCESS',
    }).catch((e: { code: string; constraint: string }) => e);
    expect(error).toMatchObject({ code: '23503', constraint: 'workflow_step_dependencies_dependent_fkey' });
  });
});

describe('job_replays constraints', () => {
  it('rejects a blank reason, an oversized key, and cascades lineage with its source but not its replay', async () => {
    const source = newId();
    const replay = newId();
    await insert('job_queue', job({ id: source, status: 'SUCCEEDED', ...finished }));
    await insert('job_queue', job({ id: replay }));
    const base = { source_job_id: source, source_run_number: 1, replay_request_key: 'k', replay_job_id: replay, reason: 'again' };
    expect(await violation('job_replays', { ...base, reason: ' ' })).toBe('job_replays_reason_not_blank');
    expect(await violation('job_replays', { ...base, replay_request_key: 'x'.repeat(513) })).toBe('job_replays_key_valid');
    expect(await violation('job_replays', { ...base, source_run_number: 0 })).toBe('job_replays_run_valid');
    await insert('job_replays', base);
    const error = await pool.query('DELETE FROM runledger.job_queue WHERE id = $1', [replay]).catch((e: { code: string }) => e);
    // PostgreSQL 18 reports ON DELETE RESTRICT as 23001, earlier versions as 23503.
    expect(error).toMatchObject({ constraint: 'job_replays_replay_job_id_fkey' });
    expect(['23001', '23503']).toContain((error as { code: string }).code);
    await pool.query('DELETE FROM runledger.job_queue WHERE id = $1', [source]);
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM runledger.job_replays WHERE replay_job_id = $1', [replay]);
    expect(rows[0]!.n).toBe(0);
  });
});
