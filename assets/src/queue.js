// QueueView shows the sends waiting for the running turn (DESIGN.md §10.2),
// in the order they will run, each with its position and a cancel control.
// A queued send leaves the view when it starts (its user message event) or
// is cancelled (queue_cancelled), in every tab.
import { h, icon } from './dom.js';
import { userMessage } from './message.js';

export class QueueView {
  constructor(live, { onCancel }) {
    this.box = h('div', { id: 'queue', class: 'queue', 'data-testid': 'queue', hidden: true });
    live.after(this.box);
    this.items = new Map(); // message_id → element
    this.box.addEventListener('click', (e) => {
      const b = e.target.closest('[data-cancel]');
      if (b) { b.disabled = true; onCancel(b.dataset.cancel).finally(() => { b.disabled = false; }); }
    });
  }

  has(id) { return this.items.has(id); }

  // add shows a queued send: bubble is the composer's pending message when
  // this tab sent it, else one is made from content.
  add(id, content, bubble) {
    if (this.items.has(id)) { bubble?.remove(); return; }
    const msg = bubble || userMessage({ type: 'user_message', content });
    msg.classList.add('pending');
    const item = h('div', { class: 'queued', 'data-testid': 'queued', 'data-message-id': id },
      msg,
      h('div', { class: 'queued-meta' },
        h('span', { class: 'queued-position', 'data-testid': 'queued-position' }),
        h('button', { type: 'button', class: 'queued-cancel', 'data-cancel': id, 'data-testid': 'cancel-queued', 'aria-label': 'Cancel this queued message' }, icon('x'), 'Cancel')));
    this.items.set(id, item);
    this.box.append(item);
    this.renumber();
  }

  remove(id) {
    const item = this.items.get(id);
    if (!item) return;
    item.remove();
    this.items.delete(id);
    this.renumber();
  }

  renumber() {
    let n = 0;
    for (const item of this.items.values()) {
      n++;
      item.querySelector('.queued-position').textContent = n === 1 ? 'Queued · runs next' : `Queued · ${n}`;
    }
    this.box.hidden = n === 0;
  }
}
