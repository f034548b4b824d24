// The search box above the conversation list: Ctrl/Cmd-K focuses it
// (shortcuts.js), the results (WS op `search`) replace the list while it
// holds a query, Escape or the field's × ("Clear search") clears it, the
// arrow keys move through the results and Enter opens one.
// Result links are ordinary /c/{id} links, so App's link handler opens them.
import { h } from './dom.js';
import { clone } from './message.js';
import { UNTITLED } from './rules.js';

const DEBOUNCE_MS = 120; // one request per pause in typing, not per key

export class Search {
  constructor(root, { conn }) {
    this.root = root;
    this.conn = conn;
    this.input = root.querySelector('#conv-search');
    this.list = root.querySelector('#search-results');
    this.clearButton = root.querySelector('.search-clear'); // the field's ×, shown while it holds a query
    this.seq = 0; // answers to older queries are dropped
    this.timer = 0;
    if (!this.input || !this.list) return;
    this.input.addEventListener('input', () => {
      this.showClear();
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(), DEBOUNCE_MS);
    });
    this.input.addEventListener('keydown', (e) => {
      const first = this.list.querySelector('a');
      if (e.key === 'Escape' && !e.shiftKey) { // Shift+Esc: the message box (shortcuts.js)
        e.preventDefault();
        this.clear();
        this.input.blur();
      } else if (e.key === 'ArrowDown' && first) {
        e.preventDefault();
        first.focus();
      } else if (e.key === 'Enter' && first) {
        e.preventDefault();
        first.click();
      }
    });
    this.list.addEventListener('keydown', (e) => {
      const links = [...this.list.querySelectorAll('a')];
      const i = links.indexOf(document.activeElement);
      if (i < 0) return;
      if (e.key === 'ArrowDown' && i + 1 < links.length) { e.preventDefault(); links[i + 1].focus(); }
      if (e.key === 'ArrowUp') { e.preventDefault(); (i > 0 ? links[i - 1] : this.input).focus(); }
      if (e.key === 'Escape') { e.preventDefault(); this.input.focus(); }
    });
    this.list.addEventListener('click', (e) => {
      if (e.target.closest('a')) this.clear();
    });
    this.clearButton?.addEventListener('click', () => {
      this.clear();
      this.input.focus();
    });
  }

  showClear() {
    if (this.clearButton) this.clearButton.hidden = this.input.value === '';
  }

  // focus puts the cursor in the search box, its text selected.
  focus() {
    if (!this.input) return false;
    document.body.dataset.sidebar = 'open'; // on narrow screens the sidebar is a drawer
    this.input.focus();
    this.input.select();
    return true;
  }

  clear() {
    this.input.value = '';
    this.showClear();
    clearTimeout(this.timer);
    this.seq++;
    this.show(null);
  }

  async run() {
    const q = this.input.value.trim();
    const n = ++this.seq;
    if (!q) { this.show(null); return; }
    try {
      const { results } = await this.conn.request('search', { q: q.slice(0, 1024), limit: 20 }, { retry: false });
      if (n === this.seq) this.show(results);
    } catch (err) {
      if (n === this.seq) this.show([], err.message);
    }
  }

  // show renders results (null: no search, the conversation list is back).
  show(results, error) {
    this.root.dataset.searching = results ? 'true' : 'false';
    this.list.hidden = !results;
    if (!results) { this.list.replaceChildren(); return; }
    if (!results.length) {
      this.list.replaceChildren(h('li', { class: 'search-empty' }, error || 'No matches.'));
      return;
    }
    this.list.replaceChildren(...results.map((r) => {
      const li = clone('tpl-search-result'); // web.SearchResult
      li.querySelector('.search-link').href = `/c/${encodeURIComponent(r.conversation_id)}${r.message_id ? `#message-${encodeURIComponent(r.message_id)}` : ''}`;
      li.querySelector('.search-title').textContent = r.title || UNTITLED;
      li.querySelector('.search-snippet').replaceChildren(snippet(r.snippet));
      return li;
    }));
  }
}

// snippet turns the server's snippet (escaped text whose only markup is
// <mark>, docs/PROTOCOL.md) into nodes, parsed inert and keeping nothing
// but text and <mark> even if the server ever sent more.
function snippet(html) {
  const t = document.createElement('template');
  t.innerHTML = html || '';
  for (const el of [...t.content.querySelectorAll('*')]) {
    if (el.tagName !== 'MARK') el.replaceWith(document.createTextNode(el.textContent));
  }
  for (const el of t.content.querySelectorAll('mark')) el.replaceChildren(el.textContent);
  return t.content;
}
