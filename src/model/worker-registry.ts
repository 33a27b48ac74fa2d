/**
 * How the worker registry (runledger.workers) times a worker's row, shared by
 * the worker that writes it and the dashboard that reads it. A worker
 * heartbeats its row every interval (REGISTRY_INTERVAL_MS by default,
 * `workerRegistry.intervalMs`, jittered by up to a fifth), and each heartbeat
 * sets `expires_at` REGISTRY_TTL_INTERVALS intervals ahead, so a row carries
 * its own interval: (expires_at - last_seen_at) / REGISTRY_TTL_INTERVALS.
 *
 * A row is **stale** once its last heartbeat is older than
 * REGISTRY_STALE_INTERVALS of its intervals: the next heartbeat was due by
 * 1.2 intervals, so the worker missed one (a stalled event loop, a lost
 * connection). It still counts as live until it expires, at
 * REGISTRY_TTL_INTERVALS; then it is gone.
 */

export const REGISTRY_INTERVAL_MS = 15_000;
export const REGISTRY_TTL_INTERVALS = 3;
export const REGISTRY_STALE_INTERVALS = 2;
