/** Routes of the operator's pages (queues, workers, schedules, definitions, dead letters), kept out of main.ts. */
import type { Session } from '../api.js';
import type { Context, View } from '../context.js';
import { definitionsView, schedulesView } from './catalog.js';
import { deadLettersView } from './dead-letters.js';
import { queuesView, workersView } from './fleet.js';

export function operationsView(context: Context, page: string | undefined, query: URLSearchParams): View | undefined {
  switch (page) {
    case 'queues':
      return queuesView(context, query);
    case 'workers':
      return workersView(context);
    case 'schedules':
      return schedulesView(context, query);
    case 'definitions':
      return definitionsView(context, query);
    case 'dead-letters':
      return deadLettersView(context, query);
    default:
      return undefined;
  }
}

/** Workers, schedules and definitions are an admin's pages (the server refuses them to other scopes): their links go. */
export function hideAdminLinks(session: Session): void {
  if (session.scope.kind === 'admin') return;
  for (const link of document.querySelectorAll<HTMLElement>('nav [data-admin]')) link.remove();
}
