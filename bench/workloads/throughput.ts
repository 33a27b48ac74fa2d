/**
 * The shape shared by every throughput workload: for each system that
 * supports it, `repeats` times, clone a fresh database, seed (untimed, not
 * counted), read the settled commit and tuple counters, run the timed part,
 * read them again. Medians of the repetitions, min and max, commits,
 * statements, rows written and this process's CPU per unit, and each runledger variant's ratio
 * to the best peer variant.
 */
import { resetServerStatements, serverStatementCount } from '../pgss.js';
import { spread } from '../stats.js';
import { countersAfter, countersBefore, readTuples, rowsWritten, sumTuples, tupleDelta } from '../tuples.js';
import { indexEntriesSince, walStart } from '../wal.js';
import type { BenchSystem, Timed } from '../systems/types.js';
import type { BenchContext, RepMeasure, ThroughputResult, ThroughputRow, Workload } from './types.js';

export interface ThroughputSpec {
  key: string;
  title: string;
  size: string;
  unit: string;
  notes?: string[];
  units: number;
  supports(system: BenchSystem): boolean;
  seed?(system: BenchSystem, url: string): Promise<void>;
  run(system: BenchSystem, url: string): Promise<Timed>;
}

export async function measureRep(context: BenchContext, system: BenchSystem, spec: ThroughputSpec): Promise<RepMeasure> {
  return context.withDatabase(system, async (url, database) => {
    // A clone starts with zeroed table counters; read them anyway, so the seeding's own rows are a delta too.
    const fresh = await readTuples(url);
    if (spec.seed) await spec.seed(system, url);
    const quietMs = context.config.quick ? 300 : 500;
    // Profiling aid (BENCH_DEBUG_PGSS=1 with a server preloading pg_stat_statements): what the server spent its time on.
    const profiling = process.env.BENCH_DEBUG_PGSS ? await resetServerStatements(url) : false;
    // Outside the settled commit counts on both sides (bench/wal.ts).
    const wal = await walStart(url);
    const before = await countersBefore(context.admin, url, database, quietMs);
    // This process's CPU over the timed part: the system's own client work (runledger and both peers run in-process).
    const cpu = process.cpuUsage();
    const timed = await spec.run(system, url);
    const nodeCpu = process.cpuUsage(cpu);
    const after = await countersAfter(context.admin, url, database, quietMs);
    const indexEntries = await indexEntriesSince(url, wal);
    if (profiling) await serverStatementCount(url);
    const commits = after.commits - before.commits - timed.harnessCommits;
    const statements = timed.statements ?? null;
    const tuplesByTable = tupleDelta(before.tuples, after.tuples);
    const tuples = sumTuples(tuplesByTable);
    const written = rowsWritten(tuples);
    const seedWritten = rowsWritten(sumTuples(tupleDelta(fresh, before.tuples)));
    return {
      wallMs: timed.wallMs,
      units: spec.units,
      rate: (spec.units / timed.wallMs) * 1000,
      commits,
      commitsPerUnit: commits / spec.units,
      statements,
      statementsPerUnit: statements === null ? null : statements / spec.units,
      tuples,
      tuplesByTable,
      rowsWritten: written,
      rowsWrittenPerUnit: written / spec.units,
      hotUpdatesPerUnit: tuples.hotUpdated / spec.units,
      indexEntriesPerUnit: indexEntries === null ? null : indexEntries / spec.units,
      nodeCpuUsPerUnit: nodeCpuPerUnit(nodeCpu, spec.units),
      seedRowsWritten: seedWritten,
      rowsWrittenWithSeedPerUnit: (written + seedWritten) / spec.units,
    };
  });
}

export function throughputWorkload(spec: ThroughputSpec): Workload {
  return {
    key: spec.key,
    async run(context, systems): Promise<ThroughputResult> {
      const rows: ThroughputRow[] = [];
      for (const system of systems.filter((s) => spec.supports(s))) {
        const reps: RepMeasure[] = [];
        for (let rep = 0; rep < context.config.repeats; rep += 1) {
          context.log(`${spec.key}: ${system.label}, run ${rep + 1}/${context.config.repeats}`);
          const measure = await measureRep(context, system, spec);
          context.log(
            `  ${measure.rate.toFixed(0)} ${spec.unit}/s, ${measure.commitsPerUnit.toFixed(3)} commits/${singular(spec.unit)}, ${measure.rowsWrittenPerUnit.toFixed(2)} rows written/${singular(spec.unit)} (${measure.hotUpdatesPerUnit.toFixed(2)} HOT updates), ${measure.indexEntriesPerUnit?.toFixed(2) ?? 'n/a'} index entries, ${measure.nodeCpuUsPerUnit.toFixed(1)} us Node CPU/${singular(spec.unit)}`,
          );
          reps.push(measure);
        }
        const statements = reps.map((r) => r.statementsPerUnit).filter((v): v is number => v !== null);
        rows.push({
          system: system.key,
          label: system.label,
          peer: system.peer,
          reps,
          rate: spread(reps.map((r) => r.rate)),
          commitsPerUnit: spread(reps.map((r) => r.commitsPerUnit)),
          statementsPerUnit: statements.length === reps.length ? spread(statements) : null,
          rowsWrittenPerUnit: spread(reps.map((r) => r.rowsWrittenPerUnit)),
          hotUpdatesPerUnit: spread(reps.map((r) => r.hotUpdatesPerUnit)),
          indexEntriesPerUnit: reps.every((r) => r.indexEntriesPerUnit !== null) ? spread(reps.map((r) => r.indexEntriesPerUnit as number)) : null,
          rowsWrittenWithSeedPerUnit: spread(reps.map((r) => r.rowsWrittenWithSeedPerUnit)),
          nodeCpuUsPerUnit: spread(reps.map((r) => r.nodeCpuUsPerUnit)),
          ratioToBestPeer: null,
        });
      }
      const peers = rows.filter((r) => r.peer);
      const best = peers.reduce<ThroughputRow | null>((acc, r) => (acc === null || r.rate.median > acc.rate.median ? r : acc), null);
      for (const row of rows) if (!row.peer && best) row.ratioToBestPeer = row.rate.median / best.rate.median;
      return {
        kind: 'throughput',
        key: spec.key,
        title: spec.title,
        size: spec.size,
        unit: spec.unit,
        notes: spec.notes ?? [],
        bestPeer: best?.system ?? null,
        rows,
      };
    },
  };
}

/** User + system CPU microseconds of this process (a `process.cpuUsage(start)` delta) per unit of work. */
export function nodeCpuPerUnit(delta: NodeJS.CpuUsage, units: number): number {
  return (delta.user + delta.system) / units;
}

export function singular(unit: string): string {
  return unit.endsWith('s') ? unit.slice(0, -1) : unit;
}
