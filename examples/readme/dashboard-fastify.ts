import Fastify from 'fastify';
import middie from '@fastify/middie';
import type { DashboardHandler } from 'runledger';

/** `dashboard`: a createDashboard handler as above, basePath '/admin/runledger'. */
export async function serveWithFastify(dashboard: DashboardHandler) {
  const app = Fastify();
  await app.register(middie);
  app.use('/admin/runledger', dashboard);
  app.addHook('onClose', async () => dashboard.close());
  await app.listen({ port: 3000 });
  return app;
}
