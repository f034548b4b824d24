// Branches (docs/PROTOCOL.md "Branches"): edit and regenerate controls on
// messages and "‹ 2 / 3 ›" between the versions of a place in the
// conversation. The markup comes from web/branch.templ. Any tab whose open
// conversation's head moves (the agent stream's `updated` event, from this
// tab or another) re-renders it from the server, so every tab shows the
// active path.
import { h } from './dom.js';

const ALL_PAGE = 1000; // messages per branch=all request when looking up siblings

export class Branches {
  // chat() is the open Chat or null; reload() re-renders the open
  // conversation; toast(message, kind) reports.
  constructor({ conn, chat, reload, toast }) {
    this.conn = conn;
    this.chat = chat;
    this.reload = reload;
    this.toast = toast;
    document.addEventListener('click', (e) => {
      if (e.defaultPrevented || e.button !== 0) return;
      const btn = e.target.closest('[data-branch]');
      const msg = btn?.closest('.msg[data-id]');
      const c = this.chat();
      if (!btn || !msg || !c) return;
      e.preventDefault();
      this.act(btn.dataset.branch, msg, c).catch((err) => this.toast(err.message, 'error'));
    });
  }

  // onAgentEvent follows a moved head of the open conversation (an
  // updated event with head; one without changed settings only).
  onAgentEvent(ev) {
    const c = this.chat();
    if (ev.type === 'updated' && ev.head && c && c.id === ev.conversation_id) {
      // A regenerate or an edit runs a turn from here (the page shows it
      // running): re-render once more when it ends.
      this.moved = c.id;
      Promise.resolve(this.reload()).then(() => { if (!this.chat()?.running) this.moved = null; });
    }
  }

  // turnEnded re-renders a conversation whose head moved once the turn
  // that followed (a regenerate's or an edit's) ends: its answer came live,
  // without the "‹ 2 / 2 ›" only a history read knows. branchTurn is true
  // when the page was opened during such a turn (so it saw no move).
  turnEnded(id, branchTurn = false) {
    if (this.moved !== id && !branchTurn) return;
    this.moved = null;
    const c = this.chat();
    if (c && c.id === id) this.reload();
  }

  async act(action, msg, c) {
    const id = msg.dataset.id;
    if (action === 'regenerate' || action === 'retry') {
      // Retry answers a failed turn's question again (regenerating its
      // error): the error leaves the path, so it leaves the page at once.
      await this.conn.request('regenerate', { conversation_id: c.id, message_id: id }, { retry: false });
      if (action === 'retry') msg.remove();
    } else if (action === 'edit') {
      this.edit(msg, c);
    } else if (action === 'prev' || action === 'next') {
      const to = await this.sibling(c.id, id, action === 'prev' ? -1 : 1);
      if (to) await this.conn.request('switch_branch', { conversation_id: c.id, message_id: to }, { retry: false });
    }
  }

  // sibling is the id of the version before (-1) or after (+1) message id.
  async sibling(convID, id, step) {
    const all = [];
    for (let offset = 0; ;) {
      const { messages = [], next_offset: next } = await this.conn.request('get_messages', { conversation_id: convID, branch: 'all', offset, limit: ALL_PAGE });
      all.push(...messages);
      if (!next) break;
      offset = next; // a page ends early at the server's byte bound
    }
    const me = all.find((m) => m.id === id);
    if (!me) return null;
    const kin = all.filter((m) => (m.parent_id || '') === (me.parent_id || ''));
    // A failed try that was tried again is no version (tree.versions).
    const sibs = kin.filter((m, k) => m.type !== 'error' || k === kin.length - 1);
    return sibs[sibs.indexOf(me) + step]?.id || null;
  }

  // edit turns a user message into a small editor; sending it makes an
  // edited copy (a new version) and its answer.
  edit(msg, c) {
    if (msg.querySelector('.branch-editor')) return;
    const textEl = msg.querySelector('.user-text');
    const area = h('textarea', { class: 'branch-input', 'data-testid': 'edit-input', rows: '3', 'aria-label': 'Edited message' });
    area.value = textEl ? textEl.textContent : '';
    const cancel = h('button', { type: 'button', class: 'btn', 'data-testid': 'edit-cancel' }, 'Cancel');
    const save = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'edit-send' }, 'Send');
    const editor = h('div', { class: 'branch-editor', 'data-testid': 'edit-editor' }, area, h('div', { class: 'branch-editor-actions' }, cancel, save));
    const body = msg.querySelector('.msg-body');
    body.hidden = true;
    body.after(editor);
    area.focus();
    const close = () => { editor.remove(); body.hidden = false; };
    cancel.addEventListener('click', close);
    const send = async () => {
      const text = area.value.trim();
      if (!text) return;
      save.disabled = true;
      try {
        await this.conn.request('edit', { conversation_id: c.id, message_id: msg.dataset.id, content: [{ type: 'text', body: text }] }, { retry: false });
      } catch (err) {
        save.disabled = false;
        this.toast(`Could not edit: ${err.message}`, 'error');
        return;
      }
      close();
    };
    save.addEventListener('click', send);
    area.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
      else if (e.key === 'Escape') close();
    });
  }
}
