/**
 * The CLI commands the demo prints must work where the user stands: in a clone
 * of the repository, where `npx runledger` finds no binary (issue 21). Each is
 * run here exactly as `cliCommand` builds it for the demo's output.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { enqueueWorkflowRun, workflow } from '../../src/index.js';
import { cliCommand } from '../../demo/display.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const root = fileURLToPath(new URL('../../', import.meta.url));

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(argv: readonly string[]): Promise<Finished> {
  const [command, ...args] = argv;
  return new Promise((resolve, reject) => {
    const child = spawn(command!, args, { cwd: root, env: { ...process.env, DATABASE_URL: db.url } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the commands the demo prints', () => {
  it('never prints a bare `npx runledger` for the clone it runs in', () => {
    const demo = readFileSync(`${root}demo/run.ts`, 'utf8');
    const bare = demo.split('\n').filter((line) => line.includes('npx runledger') && !line.includes('installed the package'));
    expect(bare).toEqual([]);
    const scripts = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts[cliCommand()[2]!]).toContain('scripts/cli.ts');
  });

  it('runs `runs show <id>` from the clone', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('demo.cli').job('a', 'demo.a', {}).build());
    const result = await run(cliCommand('runs', 'show', workflowRunId));
    expect(result.stderr).not.toMatch(/not found/);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(workflowRunId);
    expect(result.stdout).toContain('demo.cli');
  });

  it('serves the dashboard from the clone, page and API', async () => {
    const argv = cliCommand('dashboard', '--port', '4000').map((arg) => (arg === '4000' ? '0' : arg));
    const [command, ...args] = argv;
    // Its own process group, so the test stops npm, tsx and the CLI together.
    const child = spawn(command!, args, { cwd: root, env: { ...process.env, DATABASE_URL: db.url }, detached: true });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const found = /http:\/\/127\.0\.0\.1:[0-9]+\//.exec(stdout);
          if (found) resolve(found[0]);
        });
        child.once('close', (code) => reject(new Error(`the dashboard exited (${code}): ${stderr}`)));
      });
      const page = await (await fetch(url)).text();
      expect(page).toContain('<script');
      const overview = (await (await fetch(`${url}api/overview`)).json()) as Record<string, unknown>;
      expect(overview).toHaveProperty('jobs');
    } finally {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
    }
  });
});
