/**
 * The dashboard page: a hash-routed single page (`#/`, `#/jobs`, `#/jobs/<id>`,
 * `#/runs`, `#/runs/<id>`) over the JSON API. It refreshes the visible view on
 * every live event (Server-Sent Events, debounced) and every POLL_MS anyway:
 * polling is the correctness path, events only make it quick.
 */
import { get, setCsrfToken, type Session } from './api.js';
import { errorText, type Context, type View } from './context.js';
import { replace, h } from './dom.js';
import { jobView } from './views/job.js';
import { jobsView } from './views/jobs.js';
import { overviewView } from './views/overview.js';
import { runView } from './views/run.js';
import { runsView } from './views/runs.js';
import { hideAdminLinks, operationsView } from './views/operations.js';
import { showUpdated } from './updated.js';
import { installThemeToggle } from './theme.js';

const POLL_MS = 5_000;
const DEBOUNCE_MS = 200;

function route(context: Context): View {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path = '/', search = ''] = hash.split('?');
  const query = new URLSearchParams(search);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'jobs' && parts[1]) return jobView(context, parts[1]);
  if (parts[0] === 'jobs') return jobsView(context, query);
  if (parts[0] === 'runs' && parts[1]) return runView(context, parts[1]);
  if (parts[0] === 'runs') return runsView(context, query);
  const operations = operationsView(context, parts[0], query);
  if (operations) return operations;
  return overviewView(context);
}

async function start(): Promise<void> {
  const main = document.getElementById('main')!;
  const errorBox = document.getElementById('error')!;
  const liveBox = document.getElementById('live')!;
  const updatedBox = document.getElementById('updated')!;
  installThemeToggle(document.querySelector<HTMLElement>('header.top')!);
  const showError = (error: unknown) => {
    errorBox.textContent = errorText(error);
    errorBox.hidden = false;
  };
  const clearError = () => {
    errorBox.hidden = true;
    errorBox.textContent = '';
  };

  let session: Session;
  try {
    session = await get<Session>('session');
  } catch (error) {
    showError(error);
    replace(main, h('p', {}, 'The dashboard is not available to you.'));
    return;
  }
  setCsrfToken(session.csrfToken);
  hideAdminLinks(session);
  const scope = session.scope;
  document.getElementById('scope')!.textContent =
    (scope.kind === 'admin' ? 'all organizations' : scope.kind === 'organization' ? `organization ${scope.organizationId}` : 'rows without an organization') +
    (session.readOnly ? ' · read-only' : '');

  let view: View | undefined;
  let running = false;
  let again = false;
  let timer: number | undefined;
  let pollTimer: number | undefined;
  // Polling, the correctness path: the next read is due POLL_MS after the last one, whatever caused it, or sooner
  // when the view asks (a run page whose steps wait to be claimed).
  const schedulePoll = () => {
    clearTimeout(pollTimer);
    pollTimer = window.setTimeout(() => void refresh(), view?.pollMs?.() ?? POLL_MS);
  };
  const refresh = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    const current = view;
    try {
      await current?.refresh();
      document.body.dataset.refreshedAt = String(Date.now());
      showUpdated(updatedBox);
    } catch (error) {
      showError(error);
    } finally {
      running = false;
      if (again) {
        again = false;
        void refresh();
      } else {
        schedulePoll();
      }
    }
  };
  const context: Context = {
    session,
    showError,
    clearError,
    refreshSoon: () => {
      clearTimeout(timer);
      timer = window.setTimeout(() => void refresh(), DEBOUNCE_MS);
    },
  };

  const show = () => {
    clearError();
    view = route(context);
    // A new page starts fresh: what keep.ts holds across refreshes is not carried to another page.
    main.replaceChildren(view.root);
    void refresh();
  };
  window.addEventListener('hashchange', () => {
    show();
    main.focus();
  });
  show();

  // Live events: any change means "read again"; the stream carries no row data. A run page's stream
  // watches its run, so it also hears the run's steps move; the stream is reopened when that changes.
  let events: EventSource | undefined;
  let watching: string | undefined;
  const connect = () => {
    const parts = (location.hash.replace(/^#/, '').split('?')[0] ?? '').split('/').filter(Boolean);
    const run = parts[0] === 'runs' && parts[1] ? decodeURIComponent(parts[1]) : undefined;
    if (events && run === watching) return;
    events?.close();
    watching = run;
    const stream = new EventSource(run === undefined ? 'api/events' : `api/events?${new URLSearchParams({ run }).toString()}`);
    events = stream;
    stream.addEventListener('hello', (event) => {
      const live = (JSON.parse((event as MessageEvent<string>).data) as { live: boolean }).live;
      liveBox.textContent = live ? 'live' : `polling every ${POLL_MS / 1000} s`;
      liveBox.className = live ? 'live on' : 'live';
    });
    stream.addEventListener('change', () => context.refreshSoon());
    stream.addEventListener('error', () => {
      liveBox.textContent = `reconnecting · polling every ${POLL_MS / 1000} s`;
      liveBox.className = 'live';
    });
  };
  window.addEventListener('hashchange', connect);
  connect();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => void start());
else void start();
