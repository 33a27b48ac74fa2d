import { z } from 'zod';
import { createWorker, defineJob, defineSchedule, workflow, type PrismaClientLike } from 'runledger';

export const sendDigest = defineJob('digest.send', z.object({ audience: z.enum(['all', 'admins']) }), async () => undefined);

export const schedules = [
  defineSchedule({ key: 'digest.morning', cron: '0 8 * * 1-5', timezone: 'Europe/Paris', job: sendDigest, payload: { audience: 'all' }, enabled: true }),
  defineSchedule({
    key: 'etl.nightly',
    cron: '0 2 * * *',
    enabled: true,
    workflow: workflow('etl.nightly').job('extract', 'etl.extract', {}).job('load', 'etl.load', {}).afterSuccess('load', ['extract']).build(),
  }),
];

export function startWorker(prisma: PrismaClientLike) {
  const worker = createWorker({ db: prisma, handlers: [sendDigest], declareSchedules: { owner: 'digest-service', prune: true, schedules } }); // prune: delete this owner's undeclared ones
  return worker.start(); // writes the schedules, then runs the scheduler loop
}
