/** The chaos run's tallies and its list of violations (anything here fails the run). */
import { DOCUMENTED_CODES, type ErrorSummary } from './messages.js';

export class ChaosStats {
  /** kind -> outcome -> count */
  readonly operations = new Map<string, Map<string, number>>();
  readonly faults = { kills: 0, replacements: 0, backendTerminations: 0, backendsTerminated: 0, outages: 0, outageMs: 0 };
  readonly workerLogs = new Map<string, number>();
  readonly violations: string[] = [];
  deadlocksSeen = 0;

  count(kind: string, outcome: string): void {
    const outcomes = this.operations.get(kind) ?? new Map<string, number>();
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    this.operations.set(kind, outcomes);
  }

  /** An error that reached a caller: documented codes are outcomes; anything else is a violation. */
  callerError(kind: string, error: ErrorSummary): void {
    this.count(kind, error.code);
    this.noteDeadlock(error, `caller of ${kind}`);
    if (!DOCUMENTED_CODES.has(error.code))
      this.violation(`undocumented error reached the caller of ${kind}: ${error.code} (${error.category}): ${error.detail}`);
  }

  workerLog(level: string, message: string, error?: ErrorSummary): void {
    const key = `${level}: ${message}${error ? ` [${error.code}]` : ''}`;
    this.workerLogs.set(key, (this.workerLogs.get(key) ?? 0) + 1);
    if (!error) return;
    this.noteDeadlock(error, 'worker log');
    if (error.category === 'internal' || error.code === 'raw' || error.code === 'database.error') {
      this.violation(`worker logged an internal error: ${message}: ${error.code}: ${error.detail}`);
    }
  }

  noteDeadlock(error: ErrorSummary, where: string): void {
    if (/40P01|deadlock/i.test(error.detail)) {
      this.deadlocksSeen += 1;
      this.violation(`deadlock (40P01) surfaced in ${where}: ${error.detail}`);
    }
  }

  violation(text: string): void {
    this.violations.push(text);
  }

  totalOperations(): number {
    let total = 0;
    for (const outcomes of this.operations.values()) for (const n of outcomes.values()) total += n;
    return total;
  }
}
