import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type DefaultTheme } from 'vitepress';
import { sections } from './sidebar.mts';

/**
 * The repository, from the root package.json's `repository` (a string or
 * `{ url }`): the nav links to it when there is one. There is none yet, so the
 * repository paths these pages cite (`src/queue/claim.ts`, `examples/...`) are
 * plain text, relative to the repository's root (docs/index.md says so).
 */
function repositoryUrl(): string | undefined {
  const manifest = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
    repository?: string | { url?: string };
  };
  const url = typeof manifest.repository === 'string' ? manifest.repository : manifest.repository?.url;
  return url?.replace(/^git\+/, '').replace(/\.git$/, '');
}
const repository = repositoryUrl();

/**
 * The API reference's sidebar, written by TypeDoc (`npm run reference`, which
 * docs:build runs first). Its two modules are named after their files; the
 * sidebar names them as users import them.
 */
function referenceSidebar(): DefaultTheme.SidebarItem[] {
  const file = fileURLToPath(new URL('../reference/api/typedoc-sidebar.json', import.meta.url));
  if (!existsSync(file)) return [];
  const names: Record<string, string> = { index: 'runledger', testing: 'runledger/testing' };
  const items = JSON.parse(readFileSync(file, 'utf8')) as DefaultTheme.SidebarItem[];
  return items.map((item) => ({ ...item, text: names[item.text ?? ''] ?? item.text }));
}

export default defineConfig({
  title: 'runledger',
  description: 'A durable job queue and workflow (DAG) engine inside your own PostgreSQL, for Prisma 7 backends.',
  cleanUrls: true,
  lastUpdated: false,
  // Dead links fail the build (VitePress's default; never turn this on).
  ignoreDeadLinks: false,
  srcExclude: ['**/node_modules/**', 'README.md'],
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/quick-start' },
      { text: 'Concepts', link: '/concepts/guarantees' },
      { text: 'Operate', link: '/operate/cli' },
      { text: 'Reference', link: '/reference/' },
      ...(repository ? [{ text: 'Source', link: repository }] : []),
    ],
    search: { provider: 'local' },
    outline: [2, 3],
    sidebar: {
      ...Object.fromEntries(sections.map((section) => [section.base, [{ text: section.text, items: section.items }]])),
      '/reference/': [{ text: 'Reference', items: [{ text: 'Overview', link: '/reference/' }, ...referenceSidebar()] }],
    },
  },
});
