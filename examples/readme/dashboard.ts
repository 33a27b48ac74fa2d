import http, { type IncomingMessage } from 'node:http';
import { adminScope, createDashboard, organizationScope, type PrismaClientLike, type Scope } from 'runledger';

/** Your own authentication (session cookie, bearer token...): who is asking? */
declare function currentUser(req: IncomingMessage): Promise<{ role: 'operator' | 'customer'; organizationId: string } | null>;

export function serve(prisma: PrismaClientLike, app: http.RequestListener) {
  const dashboard = createDashboard({
    db: prisma,
    listenConnectionString: process.env.DATABASE_URL, // live updates; without it the page polls
    basePath: '/admin/runledger',
    authorize: async (req): Promise<Scope | null> => {
      const user = await currentUser(req);
      if (!user) return null; // 403 dashboard.forbidden
      return user.role === 'operator' ? adminScope() : organizationScope(user.organizationId);
    },
  });
  const server = http.createServer((req, res) =>
    req.url === '/admin/runledger' || req.url?.startsWith('/admin/runledger/') ? dashboard(req, res) : app(req, res),
  );
  server.on('close', () => void dashboard.close()); // ends the live streams, leaves the LISTEN connection
  return server.listen(3000);
}

/** Express, Connect, or anything with `use(path, handler)`: mount at basePath (the handler reads req.originalUrl). */
export function mount(app: { use(path: string, handler: http.RequestListener): unknown }, dashboard: http.RequestListener) {
  app.use('/admin/runledger', dashboard); // before express.json(): the dashboard reads (and bounds) its own bodies
}
