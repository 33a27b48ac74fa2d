/**
 * Who is asking. Every read and every mutation of an existing job or run takes
 * a scope, matched exactly: a global scope sees only global rows (organization
 * NULL), an organization sees only its own rows, admin sees everything. An
 * organization can never see or change another organization's rows.
 */
import { z } from 'zod';
import { organizationId } from '../validation/primitives.js';

export type Scope =
  | { kind: 'global' }
  | { kind: 'organization'; organizationId: string }
  | { kind: 'admin' };

export const scopeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('global') }),
  z.object({ kind: z.literal('organization'), organizationId }),
  z.object({ kind: z.literal('admin') }),
]);

export const globalScope: Scope = Object.freeze({ kind: 'global' });
export const adminScope: Scope = Object.freeze({ kind: 'admin' });
export function organizationScope(organizationId: string): Scope {
  return { kind: 'organization', organizationId };
}

/**
 * SQL parameters for the exact-scope predicate, used as
 * `(${p.all} OR organization_id IS NOT DISTINCT FROM ${p.organizationId}::text)`
 * on lookups by id, and on lists, where an index on organization_id must stay
 * usable (IS NOT DISTINCT FROM cannot use one), as
 * `(${p.all} OR (${p.organizationId}::text IS NULL AND organization_id IS NULL) OR organization_id = ${p.organizationId}::text)`.
 */
export function scopeParams(scope: Scope): { all: boolean; organizationId: string | null } {
  switch (scope.kind) {
    case 'admin':
      return { all: true, organizationId: null };
    case 'global':
      return { all: false, organizationId: null };
    case 'organization':
      return { all: false, organizationId: scope.organizationId };
  }
}
