// Inbox (DESIGN.md §12.4): the navigation's badge, the count of what
// waits for the signed-in user across all their conversations, and the
// inbox page (/inbox, web/inbox.templ), where each item is answered in
// place (answer_inbox) or opened in its conversation. Both follow the
// "inbox" stream: any event on it (a request made, answered, a turn that
// stopped waiting) lists the inbox again, so an item answered anywhere (in
// another tab, in the conversation, over another protocol) leaves every
// open tab at once. New rows are taken from the page as the server renders
// it again (one renderer: templ).
import { showElicitation } from './elicit.js';

const SETTLE = 50; // ms: the events of one answer arrive together; list once

export class Inbox {
  constructor({ conn, sidebarEl, toast }) {
    this.conn = conn;
    this.count = sidebarEl.querySelector('[data-testid="inbox-count"]');
    this.sidebarEl = sidebarEl;
    this.toast = toast || (() => {});
    this.main = null;
    this.timer = 0;
    this.seq = 0; // counts listings: the latest one wins
  }

  // subscribe follows the inbox stream (after every connect: no cursor,
  // the list is read again instead).
  subscribe() {
    this.conn.subscribe({ stream: 'inbox' }, (f) => {
      if (f.type === 'resync') this.subscribe();
      this.soon();
    }).then(() => this.refresh(), () => {});
  }

  soon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), SETTLE);
  }

  // refresh lists the pending items: the badge, and the page's rows.
  async refresh() {
    const seq = ++this.seq;
    let items;
    try {
      ({ items } = await this.conn.request('list_inbox', {}));
    } catch {
      return; // no inbox on this server, or offline: the next connect lists again
    }
    if (seq !== this.seq) return;
    this.setCount((items || []).length);
    this.markInput(items || []);
    if (this.main?.dataset.page === 'inbox') await this.reconcile(items || [], seq);
  }

  // markInput says on each sidebar row whether what waits there is a
  // question or a sign-in ("Needs input") rather than an approval
  // (web.ConversationItem.Input on first paint).
  markInput(items) {
    const input = new Set(items.filter((it) => it.kind !== 'approval').map((it) => it.conversation_id));
    for (const li of this.sidebarEl.querySelectorAll('.conv-item[data-id]')) li.dataset.input = String(input.has(li.dataset.id));
  }

  setCount(n) {
    if (!this.count) return;
    this.count.textContent = String(n);
    this.count.hidden = n === 0;
  }

  // reconcile makes the page's rows the pending items: the answered go,
  // the new are taken from the page rendered again, the rest stay as they
  // are (a reason being typed, a form half filled).
  async reconcile(items, seq) {
    const list = this.main.querySelector('#inbox-list');
    if (!list) return;
    const want = new Set(items.map((it) => it.id));
    for (const li of [...list.children]) if (!want.has(li.dataset.id)) li.remove();
    const have = new Set([...list.children].map((li) => li.dataset.id));
    if (items.some((it) => !have.has(it.id))) {
      let doc;
      try {
        const res = await fetch('/inbox', { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
        if (!res.ok) return;
        doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      } catch {
        return;
      }
      if (seq !== this.seq || !list.isConnected) return;
      const rows = [...doc.querySelectorAll('#inbox-list > [data-id]')].map((row) => {
        const kept = [...list.children].find((li) => li.dataset.id === row.dataset.id);
        if (kept) return kept;
        const li = document.adoptNode(row);
        this.bind(li);
        return li;
      });
      list.replaceChildren(...rows);
    }
    this.updateEmpty();
  }

  updateEmpty() {
    const box = this.main?.querySelector('.inbox');
    const list = this.main?.querySelector('#inbox-list');
    if (box && list) box.dataset.empty = String(list.children.length === 0);
  }

  // mount wires an inbox page's rows (any #main: the page is one of them).
  mount(main) {
    this.main = main;
    if (main.dataset.page !== 'inbox') return;
    for (const li of main.querySelectorAll('#inbox-list > [data-id]')) this.bind(li);
    this.updateEmpty();
    if (this.conn.status === 'online') this.refresh();
  }

  // bind builds an elicitation row's form (elicit.js, as in its tool card).
  bind(li) {
    const host = li.querySelector('.inbox-elicit');
    if (!host || host.firstChild) return;
    let req;
    try { req = JSON.parse(host.dataset.request); } catch { return; }
    showElicitation(null, host, req, async (msg) => {
      const body = { item_id: li.dataset.id, action: msg.action };
      if (msg.content) body.content = msg.content;
      await this.answer(li, body);
    });
  }

  // decide answers an approval row (its Approve or Deny button).
  async decide(btn, decision) {
    const li = btn.closest('[data-testid="inbox-item"]');
    if (!li) return;
    const body = { item_id: li.dataset.id, decision };
    const reason = li.querySelector('[data-testid="inbox-reason"]')?.value.trim();
    if (decision === 'deny' && reason) body.reason = reason;
    const buttons = li.querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await this.answer(li, body);
    } catch (err) {
      this.toast(`Could not answer: ${err.message}`, 'error');
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  // answer sends an answer; the row goes once it is stored, or when
  // someone answered first (conflict) or the item is gone (not_found):
  // then the error says who and when.
  async answer(li, body) {
    try {
      await this.conn.request('answer_inbox', body, { retry: false });
    } catch (err) {
      if (err.code !== 'conflict' && err.code !== 'not_found') throw err;
      this.toast(err.message, 'info');
    }
    li.remove();
    this.updateEmpty();
    this.soon();
  }
}
