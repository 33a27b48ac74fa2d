/**
 * The chaos worker processes: real child processes (node + tsx), each a
 * runledger worker and an enqueuer. Their reports arrive over IPC; their
 * stdout and stderr are scanned for deadlocks too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage } from './messages.js';
import type { ChaosStats } from './stats.js';

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.ts', import.meta.url));

export class WorkerFleet {
  private readonly children = new Map<string, ChildProcess>();
  private next = 1;
  private enqueuing = true;
  /** Exits that the controller did not cause (a crash is a finding). */
  readonly unexpectedExits: string[] = [];
  private readonly killed = new Set<ChildProcess>();
  private readonly terminated = new Set<ChildProcess>();

  constructor(
    private readonly url: string,
    /** Where the workers LISTEN: the database itself, also when `url` goes through a pooler. */
    private readonly listenUrl: string,
    private readonly stats: ChaosStats,
    private readonly onMessage: (message: ChildMessage) => void,
  ) {}

  get size(): number {
    return this.children.size;
  }

  start(): string {
    const id = `chaos-worker-${this.next++}`;
    const child = fork(WORKER_SCRIPT, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, CHAOS_URL: this.url, CHAOS_LISTEN_URL: this.listenUrl, CHAOS_WORKER_ID: id, CHAOS_ENQUEUE: this.enqueuing ? '1' : '0' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let tail = '';
    const scan = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-3_000);
      if (/40P01|deadlock detected/i.test(text)) {
        this.stats.deadlocksSeen += 1;
        this.stats.violation(`deadlock in ${id}'s output: ${text.trim().slice(0, 300)}`);
      }
      if (/Error|error/.test(text)) this.stats.workerLog('output', `${id}: ${text.trim().slice(0, 200)}`);
    };
    child.stdout?.on('data', scan);
    child.stderr?.on('data', scan);
    child.on('message', (message: ChildMessage) => this.onMessage(message));
    child.on('exit', (code, signal) => {
      this.children.delete(id);
      // SIGTERM before the child installed its handler ends it by the signal: still a requested stop.
      const requested = this.killed.has(child) || (this.terminated.has(child) && (code === 0 || signal === 'SIGTERM'));
      if (!requested) this.unexpectedExits.push(`${id} exited (code ${code}, signal ${signal}); its output ended with:\n${tail}`);
    });
    this.children.set(id, child);
    return id;
  }

  /** SIGKILL: no drain, no lease release; its leases expire and are reaped. */
  killRandom(): string | null {
    const ids = [...this.children.keys()];
    if (ids.length === 0) return null;
    const id = ids[Math.floor(Math.random() * ids.length)]!;
    const child = this.children.get(id)!;
    this.killed.add(child);
    child.kill('SIGKILL');
    this.children.delete(id);
    return id;
  }

  /** Tells every live worker process to enqueue the idempotent job and run of `key` now; returns how many were told. */
  broadcastDuplicates(key: string): number {
    let told = 0;
    for (const child of this.children.values()) {
      if (this.enqueuing && child.connected) {
        child.send({ t: 'enqueue-duplicates', key });
        told += 1;
      }
    }
    return told;
  }

  stopEnqueuing(): void {
    this.enqueuing = false;
    for (const child of this.children.values()) if (child.connected) child.send({ t: 'stop-enqueue' });
  }

  /** SIGTERM (the worker drains and exits 0); SIGKILL after `graceMs`. */
  async stopAll(graceMs: number): Promise<void> {
    const exits = [...this.children.values()].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          const timer = setTimeout(() => {
            this.unexpectedExits.push(`a worker did not stop within ${graceMs} ms of SIGTERM`);
            this.killed.add(child);
            child.kill('SIGKILL');
          }, graceMs);
          child.once('exit', () => {
            clearTimeout(timer);
            return resolve();
          });
          this.terminated.add(child);
          child.kill('SIGTERM');
        }),
    );
    await Promise.all(exits);
  }
}
