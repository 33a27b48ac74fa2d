/**
 * The HTTP plumbing of the dashboard, transport-free (exchange.ts): JSON
 * answers, bounded JSON bodies, and one mapping from a RunledgerError to a
 * status code. Errors leave as the error's client-safe `toJSON()` (never the
 * internal message); anything that is not a RunledgerError becomes a generic
 * `dashboard.internal`.
 */
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import { InternalError, isRunledgerError, ValidationError, type RunledgerError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { z } from 'zod';
import { parseInput } from '../validation/parse.js';
import type { BodyAnswer, DashboardRequest } from './exchange.js';

/** Action bodies are small JSON documents (a step's output at most). */
export const MAX_BODY_BYTES = 1_048_576;

/** Codes answered 403 whatever their category: who asks, not what is asked, is refused. */
const FORBIDDEN_CODES: ReadonlySet<ErrorCode> = new Set(['dashboard.forbidden', 'dashboard.read_only', 'dashboard.csrf_rejected']);
const STATUS_BY_CATEGORY = { validation: 400, not_found: 404, conflict: 409, unavailable: 503, internal: 500 } as const;

export function httpStatusOf(error: RunledgerError): number {
  if (FORBIDDEN_CODES.has(error.code)) return 403;
  if (error.code === 'dashboard.payload_too_large') return 413;
  if (error.code === 'dashboard.method_not_allowed') return 405;
  return STATUS_BY_CATEGORY[error.category];
}

const API_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const;

export function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): BodyAnswer {
  const text = JSON.stringify(body);
  return { kind: 'body', status, headers: { ...API_HEADERS, 'content-length': String(Buffer.byteLength(text)), ...headers }, body: text };
}

export function toRunledgerError(error: unknown): RunledgerError {
  if (isRunledgerError(error)) return error;
  if (isDatabaseError(error)) return normalizeDatabaseError(error, 'dashboard');
  return new InternalError('dashboard.internal', 'The dashboard could not answer this request.', { cause: error });
}

export function errorAnswer(error: unknown): BodyAnswer {
  const coded = toRunledgerError(error);
  return jsonAnswer(httpStatusOf(coded), { error: coded.toJSON() });
}

/** The request's JSON body (an object); `dashboard.invalid_input` or `dashboard.payload_too_large` otherwise. */
export async function readJsonBody(request: DashboardRequest): Promise<Record<string, unknown>> {
  const type = (request.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new ValidationError('dashboard.invalid_input', 'content-type', 'Actions take a JSON body (content-type: application/json).');
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early (the throw) cancels a Web body stream; a Node request is left unread and answered at once.
  for await (const chunk of request.body()) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      throw new ValidationError('dashboard.payload_too_large', 'body', `The body is larger than ${MAX_BODY_BYTES} bytes.`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new ValidationError('dashboard.invalid_input', 'body', 'The body is not valid JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ValidationError('dashboard.invalid_input', 'body', 'The body must be a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

/**
 * A route's body or query parsed strictly, as `dashboard.invalid_input` naming the field: a field the route
 * does not read is refused, never ignored (the library's `finishedAfter`, where the route reads `after`,
 * would otherwise leave the action unfiltered).
 */
export function routeInput<S extends z.ZodType>(schema: S, input: Record<string, unknown>): z.output<S> {
  return parseInput(schema, input, 'dashboard.invalid_input', 'body');
}

/** Refuses any field but `names`, whose values the library judges. */
export function onlyFields(input: Record<string, unknown>, names: readonly string[]): void {
  routeInput(z.strictObject(Object.fromEntries(names.map((name) => [name, z.unknown().optional()]))), input);
}

/** A query string as an object for routeInput; a parameter given twice is refused (which one would apply?). */
export function queryFields(query: URLSearchParams): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of query) {
    if (Object.hasOwn(fields, name)) throw new ValidationError('dashboard.invalid_input', name, `Invalid ${name}: is given more than once`);
    fields[name] = value;
  }
  return fields;
}
