// A payload schema whose input is not JSON: defineJob does not compile, and the error names the field.
import { z } from 'zod';
import { defineJob } from 'runledger';

export const withDate = defineJob('m.date', z.object({ dueAt: z.date() }), () => 1); // error: payload.dueAt is a Date
export const withBigint = defineJob('m.bigint', z.object({ amount: z.bigint() }), () => 1); // error: payload.amount is a bigint
export const nested = defineJob('m.nested', z.object({ lines: z.array(z.object({ at: z.date().optional() })) }), () => 1); // error: payload.lines[].at is a Date
