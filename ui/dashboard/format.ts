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
