/** IPC between the fleet workload and its worker processes. */
export type FleetParentMessage = { t: 'go' } | { t: 'stop' };
export type FleetChildMessage = { t: 'ready' } | { t: 'done'; n: number } | { t: 'stopped'; statements: number };
