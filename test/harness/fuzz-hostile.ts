/**
 * Hostile values for the public-API fuzz suite, and the mutation that plants
 * one in an otherwise valid argument list: replace an argument, replace a
 * field at any depth, add a hostile key (prototype-pollution names among
 * them), or drop a field.
 */
import fc from 'fast-check';
import { trickyJson, trickyString } from '../fixtures/storable/arbitraries.js';

export const SQL_METACHARACTERS = [
  "'; DROP TABLE runledger.job_queue; --",
  '"; SELECT pg_sleep(10); --',
  "' OR '1'='1",
  '\\',
  "E'\\x00'",
  '%_%',
  '$1 $2::uuid',
  '*/ /*',
  '$$ $tag$',
  ':: ; \'" `',
];

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i += 1) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

function cyclic(): unknown {
  const a: Record<string, unknown> = { name: 'a' };
  a.self = a;
  return a;
}

/** JSON.parse makes `__proto__` an own key, as a body parser does with a request. */
const PROTO_POLLUTERS = [
  () => JSON.parse('{"__proto__": {"polluted": "yes"}}'),
  () => JSON.parse('{"constructor": {"prototype": {"polluted": "yes"}}}'),
  () => Object.create(null),
];

const weird: fc.Arbitrary<unknown> = fc
  .constantFrom<() => unknown>(
    () => undefined,
    () => null,
    () => true,
    () => 0,
    () => -1,
    () => -0,
    () => Number.NaN,
    () => Number.POSITIVE_INFINITY,
    () => Number.NEGATIVE_INFINITY,
    () => 2 ** 31,
    () => 2 ** 53 + 2,
    () => -(2 ** 63),
    () => Number.MAX_VALUE,
    () => 1.5,
    () => 10n,
    () => Symbol('hostile'),
    () => () => 'a function',
    () => '',
    () => '   ',
    () => 'x'.repeat(70_000),
    () => 'é'.repeat(300),
    () => 'a\u0000b',
    () => 'a\uD800b',
    () => '\uDFFF',
    () => '00000000-0000-0000-0000-000000000000',
    () => 'ffffffff-ffff-ffff-ffff-fffffffffffg',
    () => '01234567-89ab-7def-8123-456789abcdef\u0000',
    () => new Date(Number.NaN),
    () => new Date(-8.64e15),
    () => new Date(8.64e15),
    () => new Date('-004713-01-01T00:00:00Z'),
    () => new Date('0000-01-01T00:00:00Z'),
    () => [],
    () => {},
    () => new Array(3),
    () => new Map([['a', 1]]),
    () => new Set([1]),
    () => Buffer.from('bytes'),
    () =>
      new (class Custom {
        field = 1;
      })(),
    () => nested(200),
    () => nested(5_000),
    () => Array.from({ length: 20_000 }, (_, i) => i),
    cyclic,
    ...PROTO_POLLUTERS,
  )
  .map((make) => make());

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: weird },
  { weight: 2, arbitrary: fc.constantFrom(...SQL_METACHARACTERS) },
  { weight: 2, arbitrary: trickyString },
  { weight: 1, arbitrary: trickyJson },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
);

export const hostileKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'then', 'a\u0000b', 'a\uD800'),
  fc.constantFrom(...SQL_METACHARACTERS),
  fc.string({ maxLength: 8 }),
);

export type Mutation =
  | { kind: 'replace-argument'; index: number; value: unknown }
  | { kind: 'replace-field'; pick: number; value: unknown }
  | { kind: 'add-key'; pick: number; key: string; value: unknown }
  | { kind: 'drop-field'; pick: number };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replace-argument' as const), index: fc.nat(), value: hostileValue }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('replace-field' as const), pick: fc.nat(), value: hostileValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add-key' as const), pick: fc.nat(), key: hostileKey, value: hostileValue }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop-field' as const), pick: fc.nat() }) },
);

type Container = Record<string, unknown> | unknown[];
const isContainer = (value: unknown): value is Container =>
  Array.isArray(value) || (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype);

/**
 * Every (container, key) slot reachable from the arguments through plain,
 * unfrozen objects and arrays (a frozen one, such as a job definition, is
 * replaced whole, never edited; a Prisma client is never entered).
 */
function slots(root: unknown[]): { container: Container; key: string | number }[] {
  const found: { container: Container; key: string | number }[] = [];
  const seen = new Set<object>();
  const walk = (container: Container) => {
    seen.add(container);
    const keys: (string | number)[] = Array.isArray(container) ? container.map((_, i) => i) : Object.keys(container);
    for (const key of keys) {
      found.push({ container, key });
      const child = (container as Record<string | number, unknown>)[key];
      if (isContainer(child) && !seen.has(child) && !Object.isFrozen(child) && !('$transaction' in child)) walk(child);
    }
  };
  walk(root);
  return found;
}

/** Applies `m` to a fresh argument list (never shared between runs: the fixtures build a new one each time). */
export function applyMutation(args: unknown[], m: Mutation): unknown[] {
  if (m.kind === 'replace-argument') {
    args[m.index % Math.max(args.length, 1)] = m.value;
    return args;
  }
  const all = slots(args);
  if (m.kind === 'add-key') {
    const containers = [...new Set(all.map((s) => s.container).filter((c) => !Array.isArray(c)))] as Record<string, unknown>[];
    for (const arg of args) if (isContainer(arg) && !Array.isArray(arg) && !Object.isFrozen(arg) && !containers.includes(arg)) containers.push(arg);
    const target = containers[m.pick % Math.max(containers.length, 1)];
    if (target) Object.defineProperty(target, m.key, { value: m.value, enumerable: true, configurable: true, writable: true });
    return args;
  }
  const slot = all[m.pick % Math.max(all.length, 1)];
  if (!slot) return args;
  if (m.kind === 'drop-field') {
    if (Array.isArray(slot.container)) slot.container.splice(slot.key as number, 1);
    else delete slot.container[slot.key as string];
  } else {
    (slot.container as Record<string | number, unknown>)[slot.key] = m.value;
  }
  return args;
}

/** Short, printable description of a mutation for failure messages (values can be huge or cyclic). */
export function describeMutation(m: Mutation): string {
  const show = (value: unknown): string => {
    try {
      const text = typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function' ? String(value) : JSON.stringify(value);
      return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 80)}... (${text.length} chars)` : text;
    } catch {
      return Object.prototype.toString.call(value);
    }
  };
  switch (m.kind) {
    case 'replace-argument':
      return `argument ${m.index} := ${show(m.value)}`;
    case 'replace-field':
      return `field #${m.pick} := ${show(m.value)}`;
    case 'add-key':
      return `add key ${JSON.stringify(m.key)} := ${show(m.value)} (object #${m.pick})`;
    case 'drop-field':
      return `drop field #${m.pick}`;
  }
}
