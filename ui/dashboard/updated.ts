/**
 * "updated 12:04:31 (3 s ago)" in the header: when the visible page last read
 * the database successfully. The relative part ticks every second, so a page
 * whose refreshes stopped (a lost connection, a failing read) shows its age.
 */
import { relative } from './time.js';

let at: string | undefined;
let _ticking: number | undefined;

function paint(box: HTMLElement): void {
  if (!at) return;
  box.textContent = `updated ${new Date(at).toLocaleTimeString()} (${relative(at)})`;
  box.setAttribute('title', 'When this page last read the database');
}

export function showUpdated(box: HTMLElement): void {
  at = new Date().toISOString();
  box.dataset.updatedAt = at;
  paint(box);
  _ticking ??= window.setInterval(() => paint(box), 1_000);
}
