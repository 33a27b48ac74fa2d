/** The chaos run's printed summary. */
import type { ChaosStats } from './stats.js';
import type { Findings } from './verify.js';

export function printSummary(input: { seconds: number; workers: number; elapsedMs: number; stats: ChaosStats; findings: Findings }): void {
  const { stats, findings } = input;
  const out: string[] = [];
  const line = (text = '') => out.push(text);
  line('');
  line(`== chaos summary: ${input.seconds} s of chaos, ${input.workers} worker processes, ${(input.elapsedMs / 1000).toFixed(0)} s in all ==`);
  line(`operations: ${stats.totalOperations()}`);
  for (const [kind, outcomes] of [...stats.operations].sort(([a], [b]) => a.localeCompare(b))) {
    const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
    line(`  ${kind.padEnd(36)} ${String(total).padStart(6)}  ${[...outcomes].map(([o, n]) => `${o} ${n}`).join(', ')}`);
  }
  const f = stats.faults;
  line(
    `faults: ${f.kills} SIGKILLs (${f.replacements} replacements), ${f.backendTerminations} termination rounds (${f.backendsTerminated} backends), ${f.outages} outages (${(f.outageMs / 1000).toFixed(1)} s refused)`,
  );
  line(`runs: ${fmt(findings.runs)}`);
  line(`jobs: ${fmt(findings.jobs)}`);
  const e = findings.executions;
  line(
    `executions: ${e.total} (first ${e.first}, retries ${e.retries}, requeues ${e.requeues}, replays ${e.replays}, re-runs of an attempt released by a database fault ${e.rerunsAfterRelease}); duplicates explained ${e.retries + e.requeues + e.replays + e.rerunsAfterRelease}, unexplained ${e.unexplained}`,
  );
  const n = findings.notifications;
  line(`terminal notifications: ${n.received} for ${n.runs} runs; missed and looked up ${n.missedLookedUp} (in listener gaps ${n.missedInListenerGaps})`);
  line(
    `idempotent enqueues from several processes: ${findings.duplicates.reports} answers for ${findings.duplicates.keys} keys (${findings.duplicates.collapsed} collapsed onto an existing job or run)`,
  );
  line(`integrity checker: ${findings.integrity.runs} runs, ${findings.integrity.jobs} jobs, ${findings.integrity.violations} violations`);
  line(
    `transactional handlers: ${findings.effects.jobs} chaos.tx jobs, ${findings.effects.succeeded} succeeded; host effect count wrong for ${findings.effects.wrong} (must be 1 per success, 0 otherwise)`,
  );
  const fn = findings.functions;
  line(
    `durable functions: ${fn.runs} runs (${fn.succeeded} succeeded, ${fn.canceled} canceled by the operator); ${fn.hostEffects} host effects; ${fn.plainExecutions} plain-step executions, ${fn.rerunSteps} steps re-run after a fault; wake lateness p99 ${fn.latenessP99Ms.toFixed(0)} ms`,
  );
  const c = findings.concurrency;
  const worst = (pick: (k: (typeof c.perKey)[number]) => number) =>
    [1, 2, 3, 4].map((limit) => `limit ${limit}: ${Math.max(0, ...c.perKey.filter((k) => k.limit === limit).map(pick))}`).join(', ');
  line(
    `concurrency keys: ${c.keys} keys, jobs ${fmt(c.jobs)}; ${c.attempts} attempts from the ledger (${c.canceledLeases} canceled leases held to their run-out), ${c.deadLetteredUnplanned} dead-lettered by faults`,
  );
  line(`  most leases of a key at once, ledger (job_events sequence): ${worst((k) => k.ledgerMax)}`);
  line(
    `  most handler runs of a key at once (${c.handlerSpans} spans; ${c.handlerUnfenced} of canceled or reaped leases left out): ${worst((k) => k.handlerMax)}`,
  );
  const r = findings.rates;
  line(`rate limits: jobs ${fmt(r.jobs)}; ${r.deadLetteredUnplanned} dead-lettered by faults`);
  for (const k of r.perKey)
    line(
      `  ${k.key}: ${k.starts} starts; most in one period ${k.bucketMax} on the bucket's clock (allowed ${k.allowed}), ${k.recordedMax} on the recorded starts (${k.recordedOver} windows over); ${k.withoutToken} starts without a token in the replayed bucket`,
    );
  line(`deadlocks (40P01): ${findings.deadlocks}`);
  const logs = [...stats.workerLogs].sort((a, b) => b[1] - a[1]).slice(0, 12);
  if (logs.length > 0) {
    line('worker warnings and errors (most frequent):');
    for (const [key, count] of logs) line(`  ${String(count).padStart(6)}  ${key.slice(0, 140)}`);
  }
  line(`violations: ${stats.violations.length}`);
  for (const v of stats.violations.slice(0, 50)) line(`  ✘ ${v.slice(0, 4_000)}`);
  if (stats.violations.length > 50) line(`  ... ${stats.violations.length - 50} more`);
  process.stdout.write(`${out.join('\n')}\n`);
}

const fmt = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';
