/**
 * What a refresh must not take from the operator: the <details> they opened
 * or closed, how far they scrolled a list, and the control that had the
 * keyboard focus. Views rebuild their parts on every refresh (dom.ts
 * replace), so before a part is emptied this notes those states by each
 * element's place in the part, and gives them back to the element that takes
 * the same place in the new content.
 *
 * A place is the path of steps from the part down to the element; a step is
 * the child's identity (its data-keep, id, data-step-key, data-job-id,
 * data-run-id or data-testid, or a <details>' summary text; else its tag),
 * then its index among the siblings of the same identity. So a stack trace
 * opened on attempt 2 stays open when attempt 3 is added, and one opened in a
 * newest-first list stays with its summary.
 *
 * Only what the operator touched is noted (toggle and scroll are watched on
 * the document), so a refresh costs nothing when nothing was touched and
 * reads no layout.
 */

const touchedDetails = new Set<HTMLDetailsElement>();
const scrolled = new Set<Element>();
let watching = false;

function watch(): void {
  if (watching || typeof document === 'undefined') return;
  watching = true;
  // Neither event bubbles; both are seen on the way down.
  document.addEventListener(
    'toggle',
    (event) => {
      if (event.target instanceof HTMLDetailsElement && !restoring) touchedDetails.add(event.target);
    },
    true,
  );
  document.addEventListener(
    'scroll',
    (event) => {
      if (event.target instanceof Element && !restoring) scrolled.add(event.target);
    },
    true,
  );
}

let restoring = false;

function identity(element: Element): string {
  const attr = (name: string) => element.getAttribute(name);
  const id = attr('data-keep') ?? attr('id') ?? attr('data-step-key') ?? attr('data-job-id') ?? attr('data-run-id') ?? attr('data-testid');
  if (id !== null) return `${element.tagName}=${id}`;
  if (element instanceof HTMLDetailsElement) return `DETAILS:${element.querySelector(':scope > summary')?.textContent?.trim().slice(0, 120) ?? ''}`;
  return element.tagName;
}

/** The steps from `root` down to `element` (null when it is not inside). */
export function placeOf(root: Element, element: Element): string[] | null {
  const steps: string[] = [];
  for (let e: Element | null = element; e !== root; e = e.parentElement) {
    if (e === null) return null;
    const parent: Element | null = e.parentElement;
    if (parent === null) return null;
    const mine = identity(e);
    let index = 0;
    for (const sibling of parent.children) {
      if (sibling === e) break;
      if (identity(sibling) === mine) index += 1;
    }
    steps.push(`${mine}#${index}`);
  }
  return steps.reverse();
}

/** The element at `place` under `root`, if the new content has one. */
export function atPlace(root: Element, place: string[]): Element | null {
  let here: Element = root;
  for (const step of place) {
    const hash = step.lastIndexOf('#');
    const wanted = step.slice(0, hash);
    let index = Number(step.slice(hash + 1));
    let next: Element | null = null;
    for (const child of here.children) {
      if (identity(child) !== wanted) continue;
      if (index === 0) {
        next = child;
        break;
      }
      index -= 1;
    }
    if (next === null) return null;
    here = next;
  }
  return here;
}

export interface Kept {
  details: { place: string[]; open: boolean }[];
  scroll: { place: string[]; top: number; left: number }[];
  focus: string[] | null;
}

/** Notes what the operator touched inside `root`, before it is emptied. */
export function noteState(root: Element): Kept {
  watch();
  const kept: Kept = { details: [], scroll: [], focus: null };
  for (const details of touchedDetails) {
    if (!details.isConnected) {
      touchedDetails.delete(details);
      continue;
    }
    const place = root.contains(details) ? placeOf(root, details) : null;
    if (place) kept.details.push({ place, open: details.open });
  }
  for (const element of scrolled) {
    if (!element.isConnected) {
      scrolled.delete(element);
      continue;
    }
    const place = root.contains(element) && element !== root ? placeOf(root, element) : null;
    if (place) kept.scroll.push({ place, top: element.scrollTop, left: element.scrollLeft });
  }
  const active = typeof document === 'undefined' ? null : document.activeElement;
  if (active && active !== root && root.contains(active)) kept.focus = placeOf(root, active);
  return kept;
}

/** Gives the noted states to the elements at the same places in `root`'s new content. */
export function restoreState(root: Element, kept: Kept): void {
  if (kept.details.length === 0 && kept.scroll.length === 0 && kept.focus === null) return;
  restoring = true;
  try {
    for (const { place, open } of kept.details) {
      const details = atPlace(root, place);
      if (details instanceof HTMLDetailsElement) {
        details.open = open;
        touchedDetails.add(details);
      }
    }
    for (const { place, top, left } of kept.scroll) {
      const element = atPlace(root, place);
      if (!element) continue;
      element.scrollTop = top;
      element.scrollLeft = left;
      scrolled.add(element);
    }
    if (kept.focus) {
      const element = atPlace(root, kept.focus);
      if (element instanceof HTMLElement || element instanceof SVGElement) element.focus({ preventScroll: true });
    }
  } finally {
    restoring = false;
  }
}
