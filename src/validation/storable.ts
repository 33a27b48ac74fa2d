/**
 * What PostgreSQL can store, decided before anything is sent to it.
 *
 * A `text` column (UTF-8 database) cannot hold U+0000 (`invalid byte sequence
 * for encoding "UTF8": 0x00`), and jsonb refuses `\u0000` and unpaired
 * surrogate escapes. A lone surrogate in a text parameter is worse: the
 * driver's UTF-8 encoding silently turns it into U+FFFD, so the value read back
 * differs from the one written. Inside a host's interactive transaction the
 * database error also aborts that transaction (25P02), so the host could not
 * even catch it and carry on. Refusing such values at the boundary keeps the
 * host's transaction usable and makes every stored value round-trip exactly.
 *
 * JSON values are walked iteratively (an explicit stack, never recursion), so
 * a 100,000-level value is refused with a coded error instead of a RangeError,
 * and the depth bound keeps every later recursive step (JSON.stringify,
 * PostgreSQL's jsonb parser, canonical comparisons) far from its own limits.
 */

/**
 * Deepest nesting of arrays/objects a stored JSON value may have (`{}` is 1).
 * Far above what payloads need, far below where recursion in JSON.stringify or
 * PostgreSQL's jsonb parser would fail.
 */
export const MAX_JSON_DEPTH = 256;

const REPLACEMENT_CHARACTER = '\uFFFD';

/** Why `text` cannot be stored as PostgreSQL text, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains NUL (U+0000), which PostgreSQL cannot store';
  const lone = LONE_SURROGATE.exec(text);
  if (lone) {
    const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
    return `contains a lone surrogate (U+${unit} at index ${lone.index}), which PostgreSQL cannot store`;
  }
  return undefined;
}

/**
 * A UTF-16 unit of a surrogate pair without its partner. Without the `u` flag
 * the pattern sees code units, which is what a lone surrogate is.
 * (`String.prototype.isWellFormed` would do, but is not in the ES2023 lib.)
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * `text` made storable rather than refused: NUL and lone surrogates become
 * U+FFFD, and it is cut to at most `maxLength` UTF-16 units without splitting
 * a surrogate pair. For text that must be recorded whatever it holds (a
 * handler's error message), where refusing would lose the failure itself.
 */
export function toStorableText(text: string, maxLength = Number.POSITIVE_INFINITY): string {
  return truncateText(text.replaceAll('\u0000', REPLACEMENT_CHARACTER).replace(LONE_SURROGATES, REPLACEMENT_CHARACTER), maxLength);
}

/** `text` cut to at most `maxLength` UTF-16 units without splitting a surrogate pair (which would leave a lone one). */
export function truncateText(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  const last = text.charCodeAt(maxLength - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? maxLength - 1 : maxLength);
}

/** Where inside a JSON value it cannot be stored, and why. */
export interface JsonProblem {
  /** Keys and indexes from the value's root to the offending member (empty: the root itself). */
  path: (string | number)[];
  reason: string;
}

/** `path` as a dotted field suffix: `a.0.b`, with keys made printable. */
export function formatJsonPath(path: ReadonlyArray<string | number>): string {
  return path.map((segment) => (typeof segment === 'string' ? toStorableText(segment) : String(segment))).join('.');
}

interface Frame {
  value: unknown;
  key: string | number | undefined;
  parent: Frame | undefined;
  depth: number;
}

/** The end of a container's children: it is no longer an ancestor (cycle detection). */
interface ExitMarker {
  exit: object;
}

function pathOf(frame: Frame | undefined): (string | number)[] {
  const path: (string | number)[] = [];
  for (let f = frame; f && f.key !== undefined; f = f.parent) path.push(f.key);
  return path.reverse();
}

/**
 * The first member of `root` (in document order) that cannot be stored as
 * jsonb exactly as given, or undefined when all of it can: plain objects,
 * arrays, finite numbers, booleans, null and storable strings (keys
 * included), nested at most `maxDepth` deep, without cycles.
 */
export function findJsonProblem(root: unknown, maxDepth: number = MAX_JSON_DEPTH): JsonProblem | undefined {
  const stack: (Frame | ExitMarker)[] = [{ value: root, key: undefined, parent: undefined, depth: 0 }];
  const ancestors = new Set<object>();
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if ('exit' in frame) {
      ancestors.delete(frame.exit);
      continue;
    }
    const { value } = frame;
    const problem = (reason: string, at: Frame | undefined = frame): JsonProblem => ({ path: pathOf(at), reason });
    if (value === null || typeof value === 'boolean') continue;
    if (typeof value === 'string') {
      const text = textProblem(value);
      if (text) return problem(text);
      continue;
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return problem('numbers must be finite');
      continue;
    }
    if (typeof value !== 'object') return problem(value === undefined ? 'undefined is not JSON' : `a ${typeof value} is not JSON`);
    if (ancestors.has(value)) return problem('contains a cycle');
    const depth = frame.depth + 1;
    if (depth > maxDepth) return problem(`is nested deeper than ${maxDepth} levels`);
    let children: Frame[];
    if (Array.isArray(value)) {
      children = [];
      for (let i = 0; i < value.length; i += 1) children.push({ value: value[i], key: i, parent: frame, depth });
    } else {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return problem('only plain objects are JSON');
      children = [];
      for (const [key, member] of Object.entries(value)) {
        const child: Frame = { value: member, key, parent: frame, depth };
        const keyProblem = textProblem(key);
        if (keyProblem) return problem(`has a key that ${keyProblem}`, child);
        children.push(child);
      }
    }
    ancestors.add(value);
    stack.push({ exit: value });
    for (let i = children.length - 1; i >= 0; i -= 1) stack.push(children[i]!);
  }
  return undefined;
}
