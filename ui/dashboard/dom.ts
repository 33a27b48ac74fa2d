/** A tiny element builder: no framework, no innerHTML with data (every text goes through textContent). */
import { noteState, restoreState } from './keep.js';

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  applyAttrs(element, attrs);
  append(element, children);
  return element;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag);
  applyAttrs(element, attrs);
  append(element, children);
  return element;
}

function applyAttrs(element: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
}

function append(element: Element, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces `target`'s content; the details opened, lists scrolled and focus inside it stay (keep.ts). */
export function replace(target: Element, ...children: (Child | Child[])[]): void {
  const kept = noteState(target);
  target.replaceChildren();
  append(target, children);
  restoreState(target, kept);
}
