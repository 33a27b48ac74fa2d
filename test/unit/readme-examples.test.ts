/**
 * The README's typed-API examples are files under examples/readme/ (compiled
 * by `npm run typecheck`, run by tests); the README must show each one
 * verbatim (inside a numbered list its lines carry the list's indent).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');
const files = readdirSync(`${root}examples/readme`).filter((name) => name.endsWith('.ts'));

function indented(text: string, indent: string): string {
  return text
    .split('\n')
    .map((line) => (line.trim() === '' ? line : indent + line))
    .join('\n');
}

describe('README examples', () => {
  it('has example files to check', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
  });

  it.each(files)('shows examples/readme/%s verbatim', (name) => {
    const text = readFileSync(`${root}examples/readme/${name}`, 'utf8');
    const shown = readme.includes(text) || readme.includes(indented(text, '   '));
    expect(shown, `README.md does not include examples/readme/${name} verbatim`).toBe(true);
  });
});
