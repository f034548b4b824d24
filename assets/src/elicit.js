// A tool's request for the user's input (MCP elicitation, DESIGN.md
// §11.6), shown in its tool card: a form built from the server's schema
// (form mode) or a link to open (URL mode), with Submit / Decline /
// Cancel. Every open tab shows it; the answer, given in any tab (or over
// the API), removes it everywhere. The server checks the content against
// the schema; a field it refuses is marked and the request still waits.
import { h } from './dom.js';

const WAITING = 'Waiting for your input';

// choicesOf lists a property's allowed values as [value, label] pairs, or
// null when any value goes.
function choicesOf(p) {
  if (!p) return null;
  if (Array.isArray(p.enum)) return p.enum.map((v, i) => [v, (p.enumNames && p.enumNames[i]) || v]);
  const of = p.oneOf || p.anyOf;
  if (Array.isArray(of)) return of.map((o) => [o.const, o.title || o.const]);
  return null;
}

// field builds the input of one property; read returns its value
// (undefined when left empty).
function field(name, p, required) {
  const id = `elicit-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const label = h('label', { for: id, class: 'elicit-label' }, p.title || name, required ? h('span', { class: 'elicit-required', 'aria-hidden': 'true' }, ' *') : null);
  const hint = p.description ? h('div', { class: 'elicit-hint' }, p.description) : null;
  const attrs = { id, name, 'data-field': name, required: required || null };
  let input;
  let read;
  const choices = choicesOf(p);
  if (p.type === 'boolean') {
    input = h('input', { ...attrs, type: 'checkbox', required: null });
    if (p.default === true) input.checked = true;
    read = () => input.checked;
    const row = h('div', { class: 'elicit-field elicit-check', 'data-testid': `elicit-field-${name}` }, input, label, hint);
    return { row, read, input };
  }
  if (p.type === 'array') {
    const items = choicesOf(p.items) || [];
    const boxes = items.map(([v, l]) => {
      const cb = h('input', { type: 'checkbox', value: v, name });
      if (Array.isArray(p.default) && p.default.includes(v)) cb.checked = true;
      return h('label', { class: 'elicit-option' }, cb, ` ${l}`);
    });
    input = h('fieldset', { class: 'elicit-options', id, 'data-field': name }, ...boxes);
    read = () => {
      const vs = boxes.map((b) => b.querySelector('input')).filter((c) => c.checked).map((c) => c.value);
      return vs.length || required ? vs : undefined;
    };
  } else if (choices) {
    input = h('select', attrs, required ? null : h('option', { value: '' }, '—'), ...choices.map(([v, l]) => h('option', { value: v }, l)));
    if (p.default !== undefined) input.value = p.default;
    read = () => (input.value === '' ? undefined : input.value);
  } else if (p.type === 'number' || p.type === 'integer') {
    input = h('input', { ...attrs, type: 'number', min: p.minimum ?? null, max: p.maximum ?? null, step: p.type === 'integer' ? 1 : 'any' });
    if (p.default !== undefined) input.value = p.default;
    read = () => (input.value === '' ? undefined : Number(input.value));
  } else {
    const type = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[p.format] || 'text';
    input = h('input', { ...attrs, type, minlength: p.minLength ?? null, maxlength: p.maxLength ?? null });
    if (p.default !== undefined) input.value = p.default;
    read = () => {
      if (input.value === '') return undefined;
      return type === 'datetime-local' ? new Date(input.value).toISOString() : input.value;
    };
  }
  input.classList.add('elicit-input');
  const row = h('div', { class: 'elicit-field', 'data-testid': `elicit-field-${name}` }, label, input, hint);
  return { row, read, input };
}

// showElicitation adds the request to card (or to fallback when the card
// is not on the page); answer(body) sends it.
export function showElicitation(card, fallback, ev, answer) {
  const host = card || fallback;
  if (!host || host.querySelector(`.elicit[data-request-id="${CSS.escape(ev.request_id)}"]`)) return;
  if (card) {
    card.dataset.waiting = 'true';
    const status = card.querySelector('.tool-status');
    if (status) {
      status.dataset.label = status.dataset.label || status.textContent;
      status.textContent = WAITING;
      status.classList.add('tool-waiting');
    }
  }
  const error = h('div', { class: 'elicit-error', role: 'alert', 'data-testid': 'elicit-error', hidden: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'elicit-accept' }, ev.mode === 'url' ? 'Done' : 'Submit');
  const decline = h('button', { type: 'button', class: 'btn', 'data-testid': 'elicit-decline' }, 'Decline');
  const cancel = h('button', { type: 'button', class: 'btn btn-quiet', 'data-testid': 'elicit-cancel' }, 'Cancel');
  const fields = [];
  const body = [];
  if (ev.mode === 'url') {
    let safe = null;
    try { const u = new URL(ev.url); if (u.protocol === 'https:' || u.protocol === 'http:') safe = u.href; } catch { /* shown as text */ }
    body.push(h('div', { class: 'elicit-url' }, safe
      ? h('a', { href: safe, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'elicit-link' }, safe)
      : h('code', null, String(ev.url || ''))));
  } else {
    const schema = ev.schema || {};
    const req = new Set(schema.required || []);
    // The required fields first; mcp-go hands the schema on as a map, so
    // the rest come in name order.
    const props = Object.entries(schema.properties || {}).sort(([a], [b]) => (req.has(b) ? 1 : 0) - (req.has(a) ? 1 : 0));
    for (const [name, p] of props) {
      const f = field(name, p || {}, req.has(name));
      fields.push([name, f]);
      body.push(f.row);
    }
  }
  const form = h('form', { class: 'elicit', 'data-testid': 'elicitation', 'data-request-id': ev.request_id, novalidate: true },
    h('div', { class: 'elicit-title' }, h('span', { class: 'elicit-server' }, ev.server ? `${ev.server} asks` : 'The tool asks'), ': ', ev.message || ''),
    ...body, error, h('div', { class: 'elicit-actions' }, cancel, decline, submit));
  const send = async (action) => {
    error.hidden = true;
    for (const [, f] of fields) f.input.removeAttribute('aria-invalid');
    for (const x of form.querySelectorAll('.elicit-field-error')) x.remove();
    const msg = { request_id: ev.request_id, action };
    if (action === 'accept' && ev.mode !== 'url') {
      const content = {};
      for (const [name, f] of fields) {
        const v = f.read();
        if (v !== undefined) content[name] = v;
      }
      msg.content = content;
    }
    for (const b of [submit, decline, cancel]) b.disabled = true;
    try {
      await answer(msg);
    } catch (err) {
      // The server names the field it refused: content.<name>: why.
      error.textContent = err.message || String(err);
      error.hidden = false;
      const m = /content\.([^:\s]+)/.exec(err.message || '');
      const bad = m && fields.find(([name]) => name === m[1]);
      if (bad) {
        // Said at the field too, where the eye is.
        bad[1].input.setAttribute('aria-invalid', 'true');
        bad[1].row.append(h('div', { class: 'elicit-error elicit-field-error', 'data-testid': 'elicit-field-error' }, err.message));
        bad[1].input.focus?.();
      }
    } finally {
      for (const b of [submit, decline, cancel]) b.disabled = false;
    }
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); send('accept'); });
  decline.addEventListener('click', () => send('decline'));
  cancel.addEventListener('click', () => send('cancel'));
  const d = card?.querySelector('.tool-details');
  if (d) d.open = true;
  (d || host).append(form);
}

const SAID = { accept: 'Answered', decline: 'Declined', cancel: 'Cancelled' };

// elicited removes the request's form and says how it was answered.
export function elicited(root, ev) {
  const form = root?.querySelector(`.elicit[data-request-id="${CSS.escape(ev.request_id)}"]`);
  if (!form) return;
  const card = form.closest('.tool-card');
  form.replaceWith(h('div', { class: 'approval-note', 'data-testid': 'elicit-answer' }, SAID[ev.action] || ev.action));
  if (card && !card.querySelector('.elicit')) {
    const status = card.querySelector('.tool-status.tool-waiting');
    if (status) {
      status.textContent = status.dataset.label || '';
      status.classList.remove('tool-waiting');
    }
    delete card.dataset.waiting;
  }
}

// showProgress shows a running call's progress in its card.
export function showProgress(card, p) {
  if (!card || !p) return;
  const d = card.querySelector('.tool-details') || card;
  let box = d.querySelector('.tool-progress');
  if (!box) {
    box = h('div', { class: 'tool-progress', 'data-testid': 'tool-progress' }, h('progress', { max: 1 }), h('span', { class: 'tool-progress-text' }));
    d.append(box);
  }
  const bar = box.querySelector('progress');
  if (p.total > 0) {
    bar.max = p.total;
    bar.value = Math.min(p.progress, p.total);
  } else {
    bar.removeAttribute('value');
  }
  box.querySelector('.tool-progress-text').textContent = [p.total > 0 ? `${p.progress} / ${p.total}` : String(p.progress), p.message].filter(Boolean).join(' · ');
}
