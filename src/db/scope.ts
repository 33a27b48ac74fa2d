/**
 * Who is asking. Every read and every mutation of an existing job or run takes
 * a scope, matched exactly: `noOrganizationScope()` sees only rows enqueued
 * without an organization (organization_id NULL), `organizationScope(id)` only
 * that organization's rows, `adminScope()` everything. An organization can
 * never see or change another organization's rows, nor rows without one.
 */
import { z } from 'zod';
import { ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { organizationId } from '../validation/primitives.js';

export type Scope = { kind: 'no_organization' } | { kind: 'organization'; organizationId: string } | { kind: 'admin' };

/**
 * Strict: `{ kind: 'admin', organizationId }` (a host meaning one tenant) must not read as every tenant, nor
 * `{ kind: 'no_organization', organizationId }` as rows without one; a field the kind does not take is refused.
 */
export const scopeSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('no_organization') }),
  z.strictObject({ kind: z.literal('organization'), organizationId }),
  z.strictObject({ kind: z.literal('admin') }),
]);

const NO_ORGANIZATION: Scope = Object.freeze({ kind: 'no_organization' });
const ADMIN: Scope = Object.freeze({ kind: 'admin' });

/** Rows that belong to no organization (enqueued without `organizationId`), and only those. */
export function noOrganizationScope(): Scope {
  return NO_ORGANIZATION;
}

/** Every row, whatever its organization: for operators and workers, never for a tenant's request. */
export function adminScope(): Scope {
  return ADMIN;
}

/**
 * One organization's rows, `organizationId` being the host's own id (see
 * MAX_ORGANIZATION_ID_LENGTH). A blank id (empty or whitespace only, what an
 * unset variable gives) is refused with `scope.invalid_input` naming
 * `organizationId`: an empty scope is no scope, never every tenant's.
 */
export function organizationScope(organizationId: string): Scope {
  return { kind: 'organization', organizationId: parseInput(organizationIdInput, { organizationId }, 'scope.invalid_input').organizationId };
}

const organizationIdInput = z.object({ organizationId });

/**
 * SQL parameters of the exact-scope predicate. Statements do not spell the
 * predicate out: they use `inScope` / `inScopeByKind` (src/db/fragments.ts).
 */
export function scopeParams(scope: Scope): { all: boolean; organizationId: string | null } {
  assertScopeHasOrganization(scope);
  switch (scope.kind) {
    case 'admin':
      return { all: true, organizationId: null };
    case 'no_organization':
      return { all: false, organizationId: null };
    case 'organization':
      return { all: false, organizationId: scope.organizationId };
  }
}

/**
 * The last guard before a scope reaches SQL: an organization scope whose id
 * is blank is refused even where no schema parsed it (a scope built by hand
 * and passed to a function that takes it as is). Every public entry point
 * also parses its scope with `scopeSchema`, which refuses the same.
 */
export function assertScopeHasOrganization(scope: Scope): void {
  if (scope.kind === 'organization' && (typeof scope.organizationId !== 'string' || scope.organizationId.trim().length === 0)) {
    throw new ValidationError('scope.invalid_input', 'scope.organizationId', 'Invalid scope.organizationId: must not be blank');
  }
}
