/**
 * runledger as the bench measures it: the built package (dist/, what an application imports after
 * `npm run build`), or the TypeScript sources through tsx with BENCH_RUNLEDGER_SOURCE=1. Measuring the sources
 * measured tsx too: esbuild's keepNames helper names every closure as it is created, which cost createWorker
 * about 17 us of CPU per job (node --cpu-prof, `__name` and the property writes under it), a cost no user
 * pays; the peers run their published JavaScript. `npm run bench` builds first.
 *
 * Types come from the sources (identical to the package's declarations), so type checking needs no build.
 */
import type * as Runledger from '../src/index.js';
import type * as GeneratedClient from '../src/generated/prisma/client.js';

// Under vitest (the tests of the bench's own parts) the sources: `npm test` does not build.
export const fromSource = process.env.BENCH_RUNLEDGER_SOURCE === '1' || process.env.VITEST !== undefined;
const root = fromSource ? '../src/' : '../dist/';
// Absolute URLs built at run time, so the type checker does not resolve dist/ (absent before a build) and a
// bundler does not rewrite the path.
const entry = new URL(`${root}index.js`, import.meta.url).href;
const generated = new URL(`${root}generated/prisma/client.js`, import.meta.url).href;

export const runledger = (await import(entry)) as typeof Runledger;
export const { PrismaClient } = (await import(generated)) as typeof GeneratedClient;
export type PrismaClient = GeneratedClient.PrismaClient;
