// Memory: the note a memory tool's card shows ("Memory updated: …" with
// Revert), and the memory page (/memory): edit, clear and revert the
// blocks. Everything goes through the public ops put_memory,
// clear_memory and revert_memory; the page is rendered by the server
// (web/memory.templ) and reloaded after each change.
import { clone } from './message.js';

// memoryNote adds to a tool card the change its call made, once.
export function memoryNote(card, change) {
  if (!card || !change || !change.id || card.querySelector('.memory-note')) return;
  const el = clone('tpl-memory-note');
  el.dataset.changeId = change.id;
  el.querySelector('.memory-note-summary').textContent = change.summary || '';
  card.append(el);
}

export class Memory {
  constructor({ conn, toast, reload }) {
    this.conn = conn;
    this.toast = toast || (() => {});
    this.reload = reload || (() => {});
  }

  // revert undoes the change of a note (in a chat) or of a row (on the page).
  async revert(btn) {
    const box = btn.closest('[data-change-id]');
    if (!box) return;
    btn.disabled = true;
    try {
      await this.conn.request('revert_memory', { change_id: box.dataset.changeId }, { retry: false });
      if (box.classList.contains('memory-note')) {
        btn.replaceWith(Object.assign(document.createElement('span'), { className: 'badge', textContent: 'Reverted' }));
        box.dataset.reverted = 'true';
        this.toast('Memory change reverted.');
      } else this.reload();
    } catch (err) {
      btn.disabled = false;
      this.toast(`Could not revert: ${err.message}`, 'error');
    }
  }

  // act runs a memory page action (save, clear, the agent picker).
  async act(a, el) {
    const main = el.closest('[data-page="memory"]');
    if (!main) return;
    const agent = main.dataset.agent;
    const block = el.closest('[data-label]');
    const err = main.querySelector('[data-testid="memory-error"]');
    try {
      if (a === 'memory-save') {
        await this.conn.request('put_memory', { agent, label: block.dataset.label, value: block.querySelector('textarea').value }, { retry: false });
      } else if (a === 'memory-clear') {
        await this.conn.request('clear_memory', { agent, label: block.dataset.label }, { retry: false });
      }
      this.reload();
    } catch (e) {
      if (err) { err.textContent = e.message; err.hidden = false; }
    }
  }

  // mount wires a memory page's live parts: the character counts follow
  // what is typed, and the agent picker opens that agent's memory.
  mount(main) {
    if (main.dataset.page !== 'memory') return;
    for (const block of main.querySelectorAll('[data-label]')) {
      const ta = block.querySelector('textarea');
      const count = block.querySelector('.memory-count');
      const limit = Number(ta.getAttribute('maxlength'));
      ta.addEventListener('input', () => { count.textContent = `${[...ta.value].length} / ${limit} characters`; });
    }
    main.querySelector('[data-action="memory-agent"]')?.addEventListener('change', (e) => {
      this.reload(`/memory?agent=${encodeURIComponent(e.target.value)}`);
    });
  }
}
