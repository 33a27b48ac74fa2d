/**
 * Every TypeScript example in the README and the docs site is a file under
 * examples/readme/ (compiled by `npm run typecheck`; some also run by tests):
 * each ```ts block of README.md and of every docs/ page (any depth) must be one of those
 * files verbatim (inside a numbered list its lines carry the list's indent),
 * and each file must be shown somewhere. So an inline snippet that nothing
 * compiles cannot slip into the README or the docs. (The API reference that
 * TypeDoc writes under docs/reference/api/ is generated, not checked here.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Hand-written pages under docs/ (not its node_modules, VitePress's cache and output, or TypeDoc's generated reference). */
function docsPages(dir: string): string[] {
  return readdirSync(`${root}${dir}`, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return ['node_modules', '.vitepress'].includes(entry.name) || path === 'docs/reference/api' ? [] : docsPages(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}
function markdownFiles(): string[] {
  return ['README.md', ...docsPages('docs').sort()];
}
const documents = new Map(markdownFiles().map((path) => [path, readFileSync(`${root}${path}`, 'utf8')]));
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

const blocks = [...documents].flatMap(([path, text]) => typescriptBlocks(text).map((block) => ({ ...block, path })));

function indented(text: string, indent: string): string {
  return text
    .split('\n')
    .map((line) => (line.trim() === '' ? line : indent + line))
    .join('\n');
}

describe('README and docs examples', () => {
  it('has example files, docs pages and TypeScript blocks to check', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect([...documents.keys()]).toContain('docs/guide/quick-start.md');
    expect(blocks.length).toBeGreaterThanOrEqual(files.length);
  });

  it.each(files)('shows examples/readme/%s verbatim in the README or a docs page', (name) => {
    const text = fileTexts.get(name) ?? '';
    const shown = [...documents.values()].some((doc) => doc.includes(text) || doc.includes(indented(text, '   ')));
    expect(shown, `neither README.md nor docs/ includes examples/readme/${name} verbatim`).toBe(true);
  });

  it('has no TypeScript block that is not an example file verbatim', () => {
    const known = new Set(fileTexts.values());
    const inline = blocks.filter((block) => !known.has(block.text)).map((block) => `${block.path}:${block.line}`);
    expect(inline, '```ts blocks that are not examples/readme/*.ts verbatim (move each into a file there)').toEqual([]);
  });

  it('finds an inline snippet, indented or not', () => {
    const sample = ['Text', '', '```ts', 'const a = 1;', '```', '', '1. Step', '', '   ```typescript', '   const b = 2;', '   ```', ''].join('\n');
    expect(typescriptBlocks(sample)).toEqual([
      { line: 3, text: 'const a = 1;\n' },
      { line: 9, text: 'const b = 2;\n' },
    ]);
  });
});
