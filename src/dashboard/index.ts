/** Public API of the dashboard; re-exported by src/index.ts. */
export { createDashboard, type DashboardOptions, type DashboardHandler } from './create-dashboard.js';
export { createDashboardFetchHandler, type DashboardFetchOptions, type DashboardFetchHandler } from './fetch-handler.js';
export type { DashboardOverview, JobLinks } from './queries.js';
export type { DashboardAttentionOptions } from './attention.js';
