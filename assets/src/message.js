// Rendering of persisted messages and live parts. The markup mirrors
// web/message.templ exactly (classes and data-testid), so a message looks
// the same whether the server rendered it on first paint or it arrived live.
import { h, icon, formatUsage, prettyJSON } from './dom.js';
import { renderInto } from './markdown.js';
import { errorText, isImageType } from './rules.js';

// Raw markdown of rendered bodies, for copy buttons.
export const rawText = new WeakMap();

// setMarkdown renders text into a .md element and remembers the source.
export function setMarkdown(el, text) {
  rawText.set(el, text);
  renderInto(el, text);
  el.classList.remove('md-raw');
}

// upgradeMarkdown renders a server-rendered .md-raw element (plain text on
// first paint) as markdown.
export function upgradeMarkdown(el) {
  setMarkdown(el, el.textContent);
}

function textOf(content) {
  return (content || []).filter((c) => c.type === 'text').map((c) => c.body).join('\n\n');
}

function images(content) {
  return (content || [])
    .filter((c) => c.type === 'image' && isImageType(c.mime))
    .map((c) => h('img', { class: 'msg-image', src: `data:${c.mime};base64,${c.data}`, alt: 'Attached image', loading: 'lazy' }));
}

function copyButton() {
  return h('button', { type: 'button', class: 'icon-btn', 'data-action': 'copy-message', 'aria-label': 'Copy message', title: 'Copy' }, icon('copy'));
}

export function usageEl(u) {
  return h('span', { class: 'usage', 'data-testid': 'usage', title: 'Token usage of this turn' }, formatUsage(u));
}

function head(m, cls) {
  return h('article', {
    class: `msg ${cls}`, 'data-testid': 'message', 'data-type': m.type, 'data-id': m.id || null,
    'data-seq': m.seq || null, 'data-client-id': m.client_id || null,
  });
}

// userMessage renders a user_message (or a pending one, before its echo).
export function userMessage(m, { pending = false } = {}) {
  const el = head(m, 'msg-user');
  if (pending) el.classList.add('pending');
  const body = h('div', { class: 'msg-body' });
  const imgs = images(m.content);
  if (imgs.length) body.append(h('div', { class: 'msg-images' }, imgs));
  const text = textOf(m.content);
  if (text) body.append(h('div', { class: 'user-text', 'data-testid': 'user-text' }, text));
  el.append(body, h('div', { class: 'msg-meta' }, copyButton()));
  return el;
}

export function reasoningEl(text, open) {
  const d = h('details', { class: 'reasoning', 'data-testid': 'reasoning' },
    h('summary', null, h('span', { class: 'reasoning-label' }, 'Reasoning')),
    h('div', { class: 'reasoning-body' }, text));
  if (open) d.open = true;
  return d;
}

// assistantMessage renders a persisted assistant_message.
export function assistantMessage(m) {
  const el = head(m, 'msg-assistant');
  if (m.reasoning) el.append(reasoningEl(m.reasoning, false));
  const body = h('div', { class: 'msg-body' });
  const md = h('div', { class: 'md' });
  setMarkdown(md, textOf(m.content));
  body.append(md);
  const imgs = images(m.content);
  if (imgs.length) body.append(h('div', { class: 'msg-images' }, imgs));
  el.append(body);
  const meta = h('div', { class: 'msg-meta' });
  if (m.interrupted) meta.append(h('span', { class: 'badge badge-warn', 'data-testid': 'interrupted' }, 'Stopped'));
  if (m.usage) meta.append(usageEl(m.usage));
  meta.append(copyButton());
  el.append(meta);
  return el;
}

function statusEl(state) {
  const label = { running: 'Running…', done: 'Done', error: 'Error' }[state];
  return h('span', { class: `tool-status tool-${state}`, 'data-testid': 'tool-status' }, label);
}

// toolCard renders a tool call; result is filled in by setToolResult.
export function toolCard({ id, seq, callId, name, args }) {
  const el = h('article', {
    class: 'msg tool-card', 'data-testid': 'tool-card', 'data-type': 'tool_call',
    'data-id': id || null, 'data-seq': seq || null, 'data-call-id': callId, 'data-state': 'running',
  });
  const d = h('details', { class: 'tool-details' },
    h('summary', null, icon('tool'), h('span', { class: 'tool-name', 'data-testid': 'tool-name' }, name), statusEl('running')),
    h('div', { class: 'tool-section' }, h('div', { class: 'tool-label' }, 'Arguments'),
      h('pre', { class: 'tool-pre', 'data-testid': 'tool-arguments' }, h('code', null, prettyJSON(args)))));
  el.append(d);
  return el;
}

// setToolResult fills the result (or error) into a tool card.
export function setToolResult(card, { id, result, isError }) {
  if (id) card.setAttribute('data-result-id', id);
  const state = isError ? 'error' : 'done';
  card.setAttribute('data-state', state);
  const d = card.querySelector('.tool-details');
  d.querySelector('.tool-status').replaceWith(statusEl(state));
  let sec = d.querySelector('.tool-result');
  if (!sec) {
    sec = h('div', { class: 'tool-section tool-result' });
    d.append(sec);
  }
  sec.replaceChildren(h('div', { class: 'tool-label' }, isError ? 'Error' : 'Result'),
    h('pre', { class: `tool-pre${isError ? ' tool-pre-error' : ''}`, 'data-testid': 'tool-result' }, h('code', null, prettyJSON(result))));
  if (isError) d.open = true;
}

// errorMessage renders an error message or a live error event.
export function errorMessage(m) {
  const el = head(m, 'msg-error');
  el.setAttribute('data-testid', 'error-message');
  el.setAttribute('role', 'alert');
  const text = errorText(m.code, m.message);
  el.append(icon('alert'), h('div', { class: 'msg-error-text' }, h('span', null, text),
    m.code ? h('code', { class: 'err-code' }, m.code) : null));
  return el;
}

// unknownMessage keeps forward compatibility: a type this version does not
// know is shown as a quiet note instead of breaking the view.
export function unknownMessage(m) {
  const el = head(m, 'msg-note');
  el.append(h('span', { class: 'muted' }, `Unsupported message (${m.type})`));
  return el;
}
