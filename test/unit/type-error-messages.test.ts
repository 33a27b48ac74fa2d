/**
 * `@ts-expect-error` (test/types/typed-api.ts) proves a wrong call fails to
 * compile, not that the compiler says why. The files in test/types/messages/
 * must not compile: each line marked `// error: <text>` must get a compiler
 * error containing that text (what the user has to fix, e.g. `readWith`), and
 * no other line may get one. The root tsconfig excludes that folder.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = 'test/types/messages';
const files = readdirSync(`${root}${dir}`).filter((name) => name.endsWith('.ts'));

interface Expected {
  file: string;
  line: number;
  text: string;
}

const expected: Expected[] = files.flatMap((file) =>
  readFileSync(`${root}${dir}/${file}`, 'utf8')
    .split('\n')
    .flatMap((line, index) => {
      const marker = /\/\/ error: (.+)$/.exec(line);
      return marker ? [{ file, line: index + 1, text: marker[1]!.trim() }] : [];
    }),
);

/** Each compiler error as `file:line` -> its whole text (first line and elaboration). */
let errors = new Map<string, string>();

beforeAll(async () => {
  const tsc = `${root}node_modules/.bin/tsc`;
  const output = await promisify(execFile)(tsc, ['-p', `${dir}/tsconfig.json`, '--pretty', 'false'], { cwd: root, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout }) => stdout,
    (failure: { stdout?: string }) => failure.stdout ?? '',
  );
  errors = new Map();
  let current: string | undefined;
  for (const line of output.split('\n')) {
    const head = /^(.+?)\((\d+),\d+\): error (TS\d+: .*)$/.exec(line);
    if (head) {
      current = `${head[1]!.replace(`${dir}/`, '')}:${head[2]}`;
      errors.set(current, `${errors.get(current) ?? ''}${head[3]}\n`);
    } else if (current && line.startsWith(' ')) {
      errors.set(current, `${errors.get(current)}${line.trim()}\n`);
    }
  }
}, 120_000);

describe('compiler error messages', () => {
  it('has marked lines to check', () => {
    expect(expected.length).toBeGreaterThan(0);
  });

  it.each(expected.map((entry) => [`${entry.file}:${entry.line}`, entry.text] as const))('%s fails naming %s', (where, text) => {
    const message = errors.get(where);
    expect(message, `${where} compiled`).toBeDefined();
    expect(message).toContain(text);
  });

  it('reports no error on an unmarked line', () => {
    const marked = new Set(expected.map((entry) => `${entry.file}:${entry.line}`));
    expect([...errors.keys()].filter((where) => !marked.has(where))).toEqual([]);
  });
});
