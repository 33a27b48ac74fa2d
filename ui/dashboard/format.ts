export function when(value: string | null | undefined): string {
  if (!value) return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleString();
}

export function seconds(value: number | null): string {
  if (value === null) return 'none waiting';
  if (value < 60) return `${value.toFixed(1)} s`;
  if (value < 3600) return `${(value / 60).toFixed(1)} min`;
  return `${(value / 3600).toFixed(1)} h`;
}

export function json(value: unknown): string {
  return value === undefined ? '—' : JSON.stringify(value, null, 2);
}

export function label(status: string): string {
  return status.toLowerCase().replace(/_/g, ' ');
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}

/** A UUIDv7 in a list of ids made together: their first digits are the same millisecond, so its random tail too. */
export function distinctId(id: string): string {
  return `${id.slice(0, 8)}…${id.slice(-4)}`;
}

/**
 * A job's progress in a few words: `ctx.progress` saves `{ processed, total }`;
 * anything else a heartbeat saved is shown as compact JSON.
 */
export function progressText(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'object' && !Array.isArray(value)) {
    const { processed, total } = value as { processed?: unknown; total?: unknown };
    if (typeof processed === 'number' && Object.keys(value).every((key) => key === 'processed' || key === 'total')) {
      if (typeof total !== 'number') return `${processed} done`;
      return `${processed} of ${total}${total > 0 ? ` (${Math.floor((processed / total) * 100)}%)` : ''}`;
    }
  }
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** A duration in milliseconds, or the absent-value dash. */
export function millis(value: number | null): string {
  if (value === null) return '—';
  if (value < 1000) return `${value} ms`;
  return seconds(value / 1000);
}
