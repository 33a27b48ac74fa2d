/**
 * The site's pages, by section, in reading order: the sidebar is built from
 * this list, and docs/index.md lists the same pages (test/unit/docs-index.test.ts
 * keeps them in step), so a page added here and not to the index fails a test.
 */
export interface Section {
  text: string;
  /** Path prefix the section's sidebar shows under. */
  base: string;
  items: { text: string; link: string }[];
}

export const sections: Section[] = [
  {
    text: 'Guide',
    base: '/guide/',
    items: [
      { text: 'Install', link: '/guide/install' },
      { text: 'Quick start', link: '/guide/quick-start' },
      { text: 'Jobs', link: '/guide/jobs' },
      { text: 'Transactions and transactional handlers', link: '/guide/transactions' },
      { text: 'The job definitions catalog', link: '/guide/job-catalog' },
      { text: 'Enqueue intents', link: '/guide/enqueue-intents' },
      { text: 'Long jobs', link: '/guide/long-jobs' },
      { text: 'Flow control', link: '/guide/flow-control' },
      { text: 'Workflows', link: '/guide/workflows' },
      { text: 'Durable functions or DAGs', link: '/guide/functions-or-dags' },
      { text: 'Cron schedules', link: '/guide/schedules' },
      { text: 'Replay and recovery', link: '/guide/replay-recovery' },
      { text: 'Typed API and conventions', link: '/guide/typed-api' },
      { text: 'Testing your application', link: '/guide/testing' },
      { text: 'An example application', link: '/guide/example-app' },
    ],
  },
  {
    text: 'Concepts',
    base: '/concepts/',
    items: [
      { text: 'Guarantees', link: '/concepts/guarantees' },
      { text: 'The ledger', link: '/concepts/ledger' },
      { text: 'The lock protocol', link: '/concepts/lock-protocol' },
      { text: 'Inside the worker', link: '/concepts/worker-loop' },
      { text: 'Durable functions', link: '/concepts/durable-functions' },
      { text: 'Failures and hostile input', link: '/concepts/failures' },
      { text: 'Deliberate differences from the original', link: '/concepts/differences' },
    ],
  },
  {
    text: 'Operate',
    base: '/operate/',
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
];
