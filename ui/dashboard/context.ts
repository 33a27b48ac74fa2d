import { ApiError, type Session } from './api.js';

export interface View {
  /** Built once per visit of a page; refresh() updates it in place, so focus, typed input and the graph's zoom survive. */
  root: HTMLElement;
  refresh(): Promise<void>;
  /** How soon to poll again after a refresh, when the view knows better than the page's default (POLL_MS). */
  pollMs?(): number | undefined;
}

export interface Context {
  session: Session;
  /** Shows a coded error in the alert region. */
  showError(error: unknown): void;
  clearError(): void;
  /** Asks for a refresh soon (after an action, on a live event). */
  refreshSoon(): void;
}

export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    const field = typeof error.body.details.field === 'string' ? ` (field: ${error.body.details.field})` : '';
    return `${error.body.code}: ${error.body.message}${field}`;
  }
  return error instanceof Error ? error.message : String(error);
}
