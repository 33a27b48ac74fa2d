/**
 * docs/index.md lists every page of the site's sidebar (docs/.vitepress/sidebar.mts),
 * and nothing else of the guide, concepts and operate sections: a page added
 * to one and not the other fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sections } from '../../docs/.vitepress/sidebar.mjs';

const index = readFileSync(new URL('../../docs/index.md', import.meta.url), 'utf8');

describe('docs index', () => {
  it.each(sections.map((section) => [section.text, section] as const))('lists the %s pages of the sidebar, in its order', (_text, section) => {
    const listed = [...index.matchAll(/\]\((\/[a-z-]+\/[a-z-]+)\)/g)].map((match) => match[1]).filter((link) => link?.startsWith(section.base));
    expect(listed).toEqual(section.items.map((item) => item.link));
  });
});
