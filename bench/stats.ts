/** Percentiles and the median/min/max summary of repeated runs. */

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** Median of the repetitions (the lower middle one for an even count, so it is always a measured value), with min and max. */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor((sorted.length - 1) / 2)]!, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}
