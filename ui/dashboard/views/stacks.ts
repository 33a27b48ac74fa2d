/** The stack traces a job's failed attempts kept (newest first), each folded under its attempt. */
import { h } from '../dom.js';

export interface AttemptStack {
  seq: string;
  runNumber: number;
  attempt: number;
  errorCode: string | null;
  stack: string;
}

export function stackTraces(stacks: AttemptStack[] | undefined): HTMLElement | null {
  if (!stacks || stacks.length === 0) return null;
  return h(
    'section',
    { 'aria-labelledby': 'stacks-title', 'data-testid': 'stacks' },
    h('h2', { id: 'stacks-title' }, 'Stack traces'),
    stacks.map((entry, index) =>
      h(
        'details',
        { open: index === 0 },
        h('summary', {}, `run ${entry.runNumber}, attempt ${entry.attempt}${entry.errorCode ? ` — ${entry.errorCode}` : ''}`),
        h('pre', { tabindex: 0, class: 'stack' }, entry.stack),
      ),
    ),
  );
}
