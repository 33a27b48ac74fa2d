import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type DefaultTheme } from 'vitepress';

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
    ],
    search: { provider: 'local' },
    outline: [2, 3],
    sidebar: {
      '/guide/': [
        {
          text: 'Guide',
          items: [
            { text: 'Install', link: '/guide/install' },
            { text: 'Quick start', link: '/guide/quick-start' },
            { text: 'Jobs', link: '/guide/jobs' },
            { text: 'Transactions and transactional handlers', link: '/guide/transactions' },
            { text: 'The job definitions catalog', link: '/guide/job-catalog' },
            { text: 'Enqueue intents', link: '/guide/enqueue-intents' },
            { text: 'Long jobs', link: '/guide/long-jobs' },
            { text: 'Workflows', link: '/guide/workflows' },
            { text: 'Cron schedules', link: '/guide/schedules' },
            { text: 'Replay and recovery', link: '/guide/replay-recovery' },
            { text: 'Typed API and conventions', link: '/guide/typed-api' },
            { text: 'Testing your application', link: '/guide/testing' },
          ],
        },
      ],
      '/concepts/': [
        {
          text: 'Concepts',
          items: [
            { text: 'Guarantees', link: '/concepts/guarantees' },
            { text: 'The ledger', link: '/concepts/ledger' },
            { text: 'The lock protocol', link: '/concepts/lock-protocol' },
            { text: 'Inside the worker', link: '/concepts/worker-loop' },
            { text: 'Failures and hostile input', link: '/concepts/failures' },
            { text: 'Deliberate differences from the original', link: '/concepts/differences' },
          ],
        },
      ],
      '/operate/': [
        {
          text: 'Operate',
          items: [
            { text: 'Operator CLI', link: '/operate/cli' },
            { text: 'Web dashboard', link: '/operate/dashboard' },
            { text: 'Queue metrics', link: '/operate/metrics' },
            { text: 'OpenTelemetry', link: '/operate/telemetry' },
            { text: 'Retention', link: '/operate/retention' },
            { text: 'Checking integrity (doctor)', link: '/operate/integrity' },
            { text: 'Chaos run', link: '/operate/chaos' },
            { text: 'Behind PgBouncer', link: '/operate/pooling' },
            { text: 'Performance and tuning', link: '/operate/performance' },
            { text: 'Scaling past one primary', link: '/operate/scaling' },
          ],
        },
      ],
      '/reference/': [{ text: 'Reference', items: [{ text: 'Overview', link: '/reference/' }, ...referenceSidebar()] }],
    },
  },
});
