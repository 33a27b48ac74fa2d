/** A labelled action form: runs `act`, shows its coded error in the alert region, refreshes on success. */
import type { Context } from '../context.js';
import { h } from '../dom.js';

export interface ActionField {
  name: string;
  label: string;
  kind?: 'text' | 'textarea' | 'select';
  options?: string[];
  value?: string;
  required?: boolean;
}

export function actionForm(
  context: Context,
  id: string,
  title: string,
  fields: ActionField[],
  submitLabel: string,
  act: (values: Record<string, string>) => Promise<unknown>,
): HTMLFormElement {
  const form = h('form', { class: 'action', 'aria-labelledby': `${id}-title`, 'data-action': id }, h('h3', { id: `${id}-title` }, title));
  for (const field of fields) {
    const fieldId = `${id}-${field.name}`;
    const common = { id: fieldId, name: field.name, required: field.required ?? false };
    const control =
      field.kind === 'textarea'
        ? h('textarea', { ...common, rows: 4, spellcheck: 'false' }, field.value ?? '')
        : field.kind === 'select'
          ? h('select', common, (field.options ?? []).map((option) => h('option', { value: option, selected: option === field.value }, option)))
          : h('input', { ...common, value: field.value ?? '', autocomplete: 'off' });
    form.append(h('label', { for: fieldId }, field.label), control);
  }
  const button = h('button', { type: 'submit' }, submitLabel);
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
  form.append(button, result);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const values: Record<string, string> = {};
    for (const [key, value] of new FormData(form)) if (typeof value === 'string') values[key] = value;
    button.disabled = true;
    result.textContent = 'working…';
    context.clearError();
    act(values).then(
      () => {
        result.textContent = 'done';
        button.disabled = false;
        context.refreshSoon();
      },
      (error: unknown) => {
        result.textContent = 'refused';
        button.disabled = false;
        context.showError(error);
      },
    );
  });
  return form;
}
