import { z } from 'zod';
import { defineJob, RetryableError } from 'runledger';

/** The host's mail client (whatever it uses). */
export interface Mailer {
  sendBatch(to: string[], options: { idempotencyKey: string; signal: AbortSignal }): Promise<void>;
}

export function newsletterJob(mailer: Mailer) {
  return defineJob('mail.newsletter', z.object({ recipients: z.array(z.string()) }), async ({ recipients }, ctx) => {
    ctx.logger.info('sending', { attempt: ctx.attempt, of: ctx.maxAttempts, organizationId: ctx.organizationId });
    // Resume where an earlier attempt stopped: the checkpoint survives retries and crashes.
    let sent = (ctx.checkpoint as { sent?: number } | null)?.sent ?? 0;
    await ctx.setStage('sending');
    while (sent < recipients.length) {
      if (ctx.remainingMs() < 5_000) throw new RetryableError('out of time; resuming from the checkpoint');
      const batch = recipients.slice(sent, sent + 100);
      // The same key on every attempt of this run: the provider drops a batch it has already sent.
      await mailer.sendBatch(batch, { idempotencyKey: `${ctx.idempotencyKey}:${sent}`, signal: ctx.signal });
      sent += batch.length;
      await ctx.saveCheckpoint({ sent }); // also extends the lease
      await ctx.progress(sent, recipients.length);
    }
    return { sent, jobId: ctx.jobId };
  });
}
