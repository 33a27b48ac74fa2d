/**
 * The exact scope predicate of src/db/scope.ts, written for the scope's kind
 * (admin: none; an organization: `organization_id = $1`; no organization:
 * `IS NULL`) in statements the dashboard composes. The library's one-statement
 * form with OR is correct too, but under a generic plan it leaves the planner
 * unable to use an index on organization_id, and the dashboard's bounded reads
 * (the key search window, the throughput chart) would then walk the table for
 * a small organization.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { assertScopeHasOrganization, type Scope } from '../db/scope.js';

export function scopeFilter(alias: Sql, scope: Scope): Sql {
  assertScopeHasOrganization(scope);
  switch (scope.kind) {
    case 'admin':
      return sqltag`TRUE`;
    case 'no_organization':
      return sqltag`${alias}.organization_id IS NULL`;
    case 'organization':
      return sqltag`${alias}.organization_id = ${scope.organizationId}::text`;
  }
}
