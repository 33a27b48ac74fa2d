/** An `AbortSignal` option, duck-typed: a signal from another realm or a polyfill is still a signal. */
import { z } from 'zod';

export const abortSignalSchema = z.custom<AbortSignal>(
  (v) => typeof (v as AbortSignal | null)?.addEventListener === 'function' && typeof (v as AbortSignal).aborted === 'boolean',
  { error: 'must be an AbortSignal' },
);
