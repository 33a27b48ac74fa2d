// app/admin/runledger/[[...path]]/route.ts
import { adminScope, createDashboardFetchHandler, organizationScope, type DashboardFetchHandler, type PrismaClientLike } from 'runledger';

declare const prisma: PrismaClientLike; // your client, e.g. from '@/lib/prisma'
/** Your own authentication, reading the Web Request (a session cookie, a bearer token...). */
declare function currentUser(request: Request): Promise<{ role: 'operator' | 'customer'; organizationId: string } | null>;

export const runtime = 'nodejs'; // Prisma, and pg for the live updates' LISTEN
export const dynamic = 'force-dynamic';

// One handler per process: in development Next.js re-evaluates modules, and each handler would hold its own live feed.
const cache = globalThis as { runledgerDashboard?: DashboardFetchHandler };
cache.runledgerDashboard ??= createDashboardFetchHandler({
  db: prisma,
  listenConnectionString: process.env.DATABASE_URL,
  basePath: '/admin/runledger',
  authorize: async (request) => {
    const user = await currentUser(request);
    if (!user) return null; // 403 dashboard.forbidden
    return user.role === 'operator' ? adminScope() : organizationScope(user.organizationId);
  },
});
const dashboard = cache.runledgerDashboard;

export { dashboard as GET, dashboard as HEAD, dashboard as POST };
