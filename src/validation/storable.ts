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
 * The JSON walk recurses, but never past MAX_JSON_DEPTH + 1 frames: it stops
 * at the first level too deep, so a 100,000-level value is refused with a
 * coded error instead of a RangeError, and the bound keeps every later
 * recursive step (JSON.stringify, PostgreSQL's jsonb parser, canonical
 * comparisons) far from its own limits. (A bounded recursion is about ten
 * times faster than an explicit stack of frame objects, and this check runs
 * on every payload and output.)
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
  // One native scan decides the common case: no NUL and no surrogate at all.
  if (!SUSPECT_UNIT.test(text)) return undefined;
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
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what PostgreSQL refuses in text and jsonb; finding it is this check's purpose.
const SUSPECT_UNIT = /[\u0000\uD800-\uDFFF]/;
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

/**
 * The first member of `root` (in document order) that cannot be stored as
 * jsonb exactly as given, or undefined when all of it can: plain objects,
 * arrays, finite numbers, booleans, null and storable strings (keys
 * included), nested at most `maxDepth` deep, without cycles.
 */
export function findJsonProblem(root: unknown, maxDepth: number = MAX_JSON_DEPTH): JsonProblem | undefined {
  const found = visit(root, 0, [], maxDepth);
  if (!found) return undefined;
  return { path: found.reversedPath.reverse(), reason: found.reason };
}

/** A problem on its way up: each level adds its key, so the path is built only on failure. */
interface Found {
  reversedPath: (string | number)[];
  reason: string;
}

function visit(value: unknown, depth: number, ancestors: object[], maxDepth: number): Found | undefined {
  switch (typeof value) {
    case 'string': {
      const problem = textProblem(value);
      return problem ? { reversedPath: [], reason: problem } : undefined;
    }
    case 'number':
      return Number.isFinite(value) ? undefined : { reversedPath: [], reason: 'numbers must be finite' };
    case 'boolean':
      return undefined;
    case 'object':
      if (value === null) return undefined;
      break;
    case 'undefined':
      return { reversedPath: [], reason: 'undefined is not JSON' };
    default:
      return { reversedPath: [], reason: `a ${typeof value} is not JSON` };
  }
  // Only the chain from the root is searched: a value shared by two branches is not a cycle.
  if (ancestors.includes(value)) return { reversedPath: [], reason: 'contains a cycle' };
  if (depth >= maxDepth) return { reversedPath: [], reason: `is nested deeper than ${maxDepth} levels` };
  ancestors.push(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = visit(value[i], depth + 1, ancestors, maxDepth);
      if (found) {
        found.reversedPath.push(i);
        return found;
      }
    }
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return { reversedPath: [], reason: 'only plain objects are JSON' };
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const keyProblem = textProblem(key);
      if (keyProblem) return { reversedPath: [key], reason: `has a key that ${keyProblem}` };
      const found = visit(record[key], depth + 1, ancestors, maxDepth);
      if (found) {
        found.reversedPath.push(key);
        return found;
      }
    }
  }
  ancestors.pop();
  return undefined;
}
