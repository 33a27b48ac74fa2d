/**
 * The dark-mode toggle in the header. Until it is pressed the page follows the
 * system (app.css's `prefers-color-scheme: dark` rules); a press stores the
 * choice in localStorage and forces it by rewriting those rules' media
 * condition (`all` forces dark, `not all` forces light), so the dark colours
 * stay written once in app.css.
 */
import { h } from './dom.js';

const KEY = 'runledger.dashboard.theme';
type Theme = 'dark' | 'light';

function stored(): Theme | null {
  try {
    const value = localStorage.getItem(KEY);
    return value === 'dark' || value === 'light' ? value : null;
  } catch {
    return null;
  }
}

export function installThemeToggle(header: HTMLElement): void {
  const system = window.matchMedia('(prefers-color-scheme: dark)');
  const rules: { rule: CSSMediaRule; text: string }[] = [];
  const collect = () => {
    for (const sheet of document.styleSheets) {
      let list: CSSRuleList;
      try {
        list = sheet.cssRules;
      } catch {
        continue;
      }
      for (const rule of list) {
        if (rule instanceof CSSMediaRule && /prefers-color-scheme:\s*dark/.test(rule.media.mediaText) && !rules.some((r) => r.rule === rule)) {
          rules.push({ rule, text: rule.media.mediaText });
        }
      }
    }
  };
  const button = h('button', { type: 'button', class: 'theme-toggle secondary', 'aria-pressed': 'false', 'data-testid': 'theme-toggle' }, 'Dark mode');
  // The choice in force: stored, or made on this page when storage is refused.
  let choice = stored();
  const apply = () => {
    collect();
    for (const { rule, text } of rules) rule.media.mediaText = choice === null ? text : choice === 'dark' ? 'all' : 'not all';
    const dark = choice === null ? system.matches : choice === 'dark';
    document.documentElement.style.colorScheme = choice === null ? '' : choice;
    button.setAttribute('aria-pressed', String(dark));
  };
  button.addEventListener('click', () => {
    choice = button.getAttribute('aria-pressed') === 'true' ? 'light' : 'dark';
    try {
      localStorage.setItem(KEY, choice);
    } catch {
      // Storage refused (private mode): the choice holds for this page only.
    }
    apply();
  });
  system.addEventListener('change', apply);
  header.append(button);
  apply();
}
