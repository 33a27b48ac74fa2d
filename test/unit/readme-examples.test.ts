/**
 * Every TypeScript example in the README is a file under examples/readme/
 * (compiled by `npm run typecheck`; some also run by tests): each ```ts block
 * of README.md must be one of those files verbatim (inside a numbered list its
 * lines carry the list's indent), and each file must be shown. So an inline
 * snippet that nothing compiles cannot slip into the README.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');
const files = readdirSync(`${root}examples/readme`).filter((name) => name.endsWith('.ts'));
const fileTexts = new Map(files.map((name) => [name, readFileSync(`${root}examples/readme/${name}`, 'utf8')]));

interface CodeBlock {
  line: number;
  /** The block's text with the fence's indent removed, ending with a newline like the files. */
  text: string;
}

/** The README's ```ts / ```typescript / ```tsx blocks (any fence indent). */
function typescriptBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const open = /^( *)```\s*(ts|typescript|tsx|mts|cts)\b/i.exec(lines[index] ?? '');
    if (!open) continue;
    const indent = open[1] ?? '';
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !/^ *```\s*$/.test(lines[end] ?? '')) {
      const line = lines[end] ?? '';
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
      end += 1;
    }
    blocks.push({ line: index + 1, text: `${body.join('\n')}\n` });
    index = end;
  }
  return blocks;
}

const blocks = typescriptBlocks(readme);

function indented(text: string, indent: string): string {
  return text
    .split('\n')
    .map((line) => (line.trim() === '' ? line : indent + line))
    .join('\n');
}

describe('README examples', () => {
  it('has example files and TypeScript blocks to check', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect(blocks.length).toBeGreaterThanOrEqual(files.length);
  });

  it.each(files)('shows examples/readme/%s verbatim', (name) => {
    const text = fileTexts.get(name) ?? '';
    const shown = readme.includes(text) || readme.includes(indented(text, '   '));
    expect(shown, `README.md does not include examples/readme/${name} verbatim`).toBe(true);
  });

  it('has no TypeScript block that is not an example file verbatim', () => {
    const known = new Set(fileTexts.values());
    const inline = blocks.filter((block) => !known.has(block.text)).map((block) => `README.md:${block.line}`);
    expect(inline, 'README.md has ```ts blocks that are not examples/readme/*.ts verbatim (move each into a file there)').toEqual([]);
  });

  it('finds an inline snippet, indented or not', () => {
    const sample = ['Text', '', '```ts', 'const a = 1;', '```', '', '1. Step', '', '   ```typescript', '   const b = 2;', '   ```', ''].join('\n');
    expect(typescriptBlocks(sample)).toEqual([
      { line: 3, text: 'const a = 1;\n' },
      { line: 9, text: 'const b = 2;\n' },
    ]);
  });
});
