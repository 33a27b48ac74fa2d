/**
 * Connection strings runledger opens its own `pg` connections with
 * (`migrate`, `createWorkflowRunListener`, a worker's or dashboard's
 * `listenConnectionString`). A malformed one is the caller's input, refused
 * as a validation error naming the field, rather than a connection failure
 * that a caller would retry (or a listener would retry for ever).
 *
 * `pg` reads the string as a URL (pg-connection-string) and percent-decodes
 * its parts with decodeURIComponent, which throws on a stray `%`: both are
 * checked here the same way. Only the form is checked; whether the server
 * answers is learnt by connecting.
 */
import { z } from 'zod';
import { textProblem } from './storable.js';

const PROTOCOLS = new Set(['postgres:', 'postgresql:']);

/** Why `value` is not a usable connection string, or undefined when it is. */
export function connectionStringProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string (received ${value === null ? 'null' : typeof value})`;
  if (value.trim() === '') return 'must not be blank';
  if (textProblem(value)) return 'must not contain NUL or lone surrogates';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a postgres:// or postgresql:// URL';
  }
  if (!PROTOCOLS.has(url.protocol)) return 'must be a postgres:// or postgresql:// URL';
  try {
    for (const part of [url.username, url.password, url.pathname, url.hostname]) decodeURIComponent(part);
  } catch {
    return 'has a malformed percent-escape (write % as %25)';
  }
  return undefined;
}

/** The zod form, for option schemas. */
export const connectionString = z.string({ error: 'must be a string' }).superRefine((value, ctx) => {
  const problem = connectionStringProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, input: value });
});
