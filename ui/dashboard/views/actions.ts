/**
 * A labelled action form: runs `act`, shows its coded error in the alert region, refreshes on success.
 * With `confirm`, the first submit only asks (a sentence saying what will happen, and Confirm / Back
 * buttons); the action runs on Confirm, so no single click changes anything.
 */
import type { Context } from '../context.js';
import { h } from '../dom.js';

export interface ActionField {
  name: string;
  label: string;
  kind?: 'text' | 'textarea' | 'select' | 'number';
  options?: string[];
  /** What each option is called on the page (the value sent stays the option). */
  optionLabels?: Record<string, string>;
  value?: string;
  required?: boolean;
}

export interface ActionOptions {
  /** The sentence asking to confirm, from the values typed; the action runs only once it is confirmed. */
  confirm?: (values: Record<string, string>) => string;
  /** Runs after a success, with the action's answer (the form then says "done" and the page refreshes). */
  done?: (answer: unknown) => void;
}

function formValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [key, value] of new FormData(form)) if (typeof value === 'string') values[key] = value;
  return values;
}

export function actionForm(
  context: Context,
  id: string,
  title: string,
  fields: ActionField[],
  submitLabel: string,
  act: (values: Record<string, string>) => Promise<unknown>,
  options: ActionOptions = {},
): HTMLFormElement {
  const form = h('form', { class: 'action', 'aria-labelledby': `${id}-title`, 'data-action': id }, h('h3', { id: `${id}-title` }, title));
  for (const field of fields) {
    const fieldId = `${id}-${field.name}`;
    const common = { id: fieldId, name: field.name, required: field.required ?? false };
    const control =
      field.kind === 'textarea'
        ? h('textarea', { ...common, rows: 4, spellcheck: 'false' }, field.value ?? '')
        : field.kind === 'select'
          ? h(
              'select',
              common,
              (field.options ?? []).map((option) => h('option', { value: option, selected: option === field.value }, field.optionLabels?.[option] ?? option)),
            )
          : h('input', { ...common, value: field.value ?? '', autocomplete: 'off', type: field.kind === 'number' ? 'number' : 'text' });
    form.append(h('label', { for: fieldId }, field.label), control);
  }
  const button = h('button', { type: 'submit' }, submitLabel);
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
  const question = h('div', { class: 'confirm', hidden: true, 'data-testid': `${id}-confirm` });
  form.append(button, question, result);

  const run = (values: Record<string, string>) => {
    button.disabled = true;
    result.textContent = 'working…';
    context.clearError();
    act(values).then(
      (answer) => {
        result.textContent = 'done';
        button.disabled = false;
        options.done?.(answer);
        context.refreshSoon();
      },
      (error: unknown) => {
        result.textContent = 'refused';
        button.disabled = false;
        context.showError(error);
      },
    );
  };
  const ask = (values: Record<string, string>) => {
    const back = h('button', { type: 'button', class: 'secondary' }, 'Back');
    const confirm = h('button', { type: 'button', class: 'danger' }, 'Confirm');
    question.replaceChildren(h('p', {}, options.confirm!(values)), confirm, back);
    question.hidden = false;
    button.hidden = true;
    const close = () => {
      question.hidden = true;
      question.replaceChildren();
      button.hidden = false;
    };
    back.addEventListener('click', () => {
      close();
      button.focus();
    });
    confirm.addEventListener('click', () => {
      close();
      run(values);
    });
    confirm.focus();
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const values = formValues(form);
    if (options.confirm) ask(values);
    else run(values);
  });
  return form;
}

/** What the requeue state policies are called on the page. */
export const STATE_POLICY_LABELS: Record<string, string> = {
  preserve_progress_and_checkpoint: 'Keep progress and checkpoint (resume)',
  reset_progress_and_checkpoint: 'Clear progress and checkpoint (start over)',
};

/** What the recovery modes are called on the page. */
export const RECOVERY_MODE_LABELS: Record<string, string> = {
  failed_only: 'Failed steps only (keep what succeeded)',
  full: 'Every step again',
};
