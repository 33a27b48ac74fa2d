/**
 * The floors of src/, lowest first. A module may import from its own folder and
 * from folders on lower floors, never from a higher floor: so the arrows only go
 * down and no cycle between folders can form. `npm run lint:layers` checks it
 * (CI runs it), and test/unit/architecture.test.ts keeps ARCHITECTURE.md's
 * diagram equal to this list.
 *
 * Several folders on one floor are peers that do not import each other.
 */
const FLOORS = [
  { name: 'model', folders: ['model'], holds: 'row types, status enums, SQL identifiers, JSON type (imports nothing of ours)' },
  { name: 'errors', folders: ['errors'], holds: 'RunledgerError and its codes, database error mapping' },
  { name: 'validation', folders: ['validation'], holds: 'zod building blocks, storable checks, Standard Schema' },
  { name: 'client', folders: ['client', 'generated'], holds: 'Prisma client types, join-or-own transactions, our own client' },
  { name: 'db', folders: ['db', 'telemetry', 'notify'], holds: 'SQL fragments, scope, ids; trace context; the shared LISTEN' },
  { name: 'job', folders: ['job'], holds: 'the job contract: defineJob, ctx, errors, retry policy, defaults, step inputs' },
  { name: 'coordination', folders: ['coordination'], holds: 'the lock ladder, job hooks, terminal transitions, dependency release, run status' },
  { name: 'queue', folders: ['queue'], holds: 'enqueue, claim, complete, fail, reap, cancel, catalog, intents, reads' },
  { name: 'workflow', folders: ['workflow'], holds: 'runs: enqueue, append, cancel, external steps, handles, reads' },
  {
    name: 'operations',
    folders: ['replay', 'recovery', 'schedules', 'retention', 'integrity', 'metrics', 'migrate', 'deprecated.ts'],
    holds: 'replay, recovery, schedules, retention, integrity, metrics, migrations; aliases of renamed names',
  },
  { name: 'runtime', folders: ['worker', 'dashboard'], holds: 'the worker and the dashboard' },
  { name: 'entry', folders: ['testing', 'index.ts'], holds: 'the public entry points: runledger, runledger/testing' },
  { name: 'cli', folders: ['cli'], holds: 'the operator CLI (it reads the public API)' },
];

const folderPattern = (folder) => (folder.endsWith('.ts') ? `^src/${folder.replace('.', '[.]')}$` : `^src/${folder}/`);

const forbidden = [
  {
    name: 'no-circular',
    comment: 'No import cycle between modules (type-only imports included).',
    severity: 'error',
    from: { path: '^src/', pathNot: '^src/generated/' },
    to: { circular: true, pathNot: '^src/generated/' },
  },
  {
    name: 'no-unknown-folder',
    comment: 'Every folder of src/ sits on a floor: a new folder is placed in FLOORS first.',
    severity: 'error',
    from: { path: '^src/', pathNot: FLOORS.flatMap((f) => f.folders).map(folderPattern) },
    to: {},
  },
];
FLOORS.forEach((floor, index) => {
  const higher = FLOORS.slice(index + 1).flatMap((f) => f.folders);
  const peers = floor.folders;
  if (higher.length > 0) {
    forbidden.push({
      name: `floor-${floor.name}-no-import-up`,
      comment: `${floor.name} (floor ${index}) imports only from its own folder and lower floors.`,
      severity: 'error',
      from: { path: peers.map(folderPattern) },
      to: { path: higher.map(folderPattern) },
    });
  }
  for (const folder of peers) {
    const others = peers.filter((p) => p !== folder);
    if (others.length > 0) {
      forbidden.push({
        name: `floor-${floor.name}-peers-apart-${folder.replace('.ts', '')}`,
        comment: `Folders on the ${floor.name} floor do not import each other.`,
        severity: 'error',
        from: { path: folderPattern(folder) },
        to: { path: others.map(folderPattern) },
      });
    }
  }
});

module.exports = {
  forbidden,
  options: {
    // TypeScript 7 (native) has no JS API: parse with swc. Type-only imports count.
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};

// Read by test/unit/architecture.test.ts (a non-enumerable property: the cruiser's schema allows no extra keys).
Object.defineProperty(module.exports, 'FLOORS', { value: FLOORS, enumerable: false });
