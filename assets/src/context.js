// The context of the open conversation: the divider a compaction leaves in
// the history (expandable to its summary) and the gauge of how full the
// model's context is. The markup and labels mirror web/message.templ,
// web/conversation.templ and web/context.go.
import { h } from './dom.js';

// summaryLabel names a summary_message's span as web/context.go's
// SummaryLabel does: by the opening words of the first and the last
// question it summarized.
export function summaryLabel(m) {
  const n = m.replaces || 0;
  const label = n === 1 ? 'Summary of 1 earlier message' : `Summary of ${n} earlier messages`;
  if (!m.first_text) return label;
  const single = (m.first_id || '') === (m.last_id || '') && (m.first_id || m.first_text === m.last_text);
  if (single || !m.last_text) return `${label}: "${m.first_text}"`;
  return `${label}, from "${m.first_text}" to "${m.last_text}"`;
}

function shortTokens(n) {
  return n < 1000 ? String(n) : `${(n / 1000).toFixed(1)}k`;
}

export function contextLabel(c) {
  return `${shortTokens(c.tokens)} / ${shortTokens(c.window)} tokens`;
}

// summaryMessage renders a summary_message as a divider.
export function summaryMessage(m) {
  return h('article', {
    class: 'msg msg-summary', 'data-testid': 'summary-divider', 'data-type': m.type,
    'data-id': m.id || null, 'data-seq': m.seq || null, 'data-kept-id': m.kept_id || null,
  }, h('details', { class: 'summary-details' },
    h('summary', null, h('span', { class: 'summary-label', 'data-testid': 'summary-label' }, summaryLabel(m))),
    h('div', { class: 'summary-body', 'data-testid': 'summary-body' }, m.summary || '')));
}

// setGauge shows a conversation's context size ({tokens, window}) in the
// gauge of main; without one the gauge hides.
export function setGauge(main, c) {
  const g = main.querySelector('#context-gauge');
  if (!g) return;
  if (!c || !c.window) { g.hidden = true; return; }
  const meter = g.querySelector('meter');
  meter.max = Math.max(c.window, 1);
  meter.high = Math.max(Math.floor(c.window * 4 / 5), 1);
  meter.value = Math.min(c.tokens, c.window);
  g.querySelector('.ctx-label').textContent = contextLabel(c);
  g.title = `Context: the conversation fills ${c.tokens} of the model's ${c.window} tokens; older messages are summarized when it fills up`;
  g.hidden = false;
}

// afterTurn is how full the context is once a turn's last answer is in it:
// the last prompt plus what the model wrote to it (usage is that answer's
// own, that model call's). web/page.go contextAfter computes the same.
export function afterTurn(c, usage) {
  if (!c || !usage) return c;
  return { ...c, tokens: c.tokens + (usage.completion_tokens || 0) };
}

// gaugeWindow is the window the gauge shows now (0: hidden, unknown).
export function gaugeWindow(main) {
  const g = main.querySelector('#context-gauge');
  return g && !g.hidden ? Number(g.querySelector('meter').max) || 0 : 0;
}

// placeDivider puts summary divider el in list before the message its
// compaction kept first (a turn's start), when that one is there; it
// returns whether it did (web/page.go dividersBetweenTurns does the same
// for the first paint).
export function placeDivider(list, el) {
  const kept = el.dataset.keptId;
  const at = kept ? [...list.children].find((c) => c.dataset.id === kept) : null;
  if (!at) return false;
  at.before(el);
  return true;
}
