// Tools per chat: the composer's Tools button opens a list of the tool
// servers (list_tools) with their tools, each ticked or not for this
// conversation. The choice is the conversation's `tools` setting
// (update_conversation; a new chat's is sent with create_conversation):
// a server's name when all its tools are ticked, a tool's name
// (server__tool) when only some are, ["*"] when everything is; the server
// offers the model only those (agent/settings.go, offersTool).
import { h, icon } from './dom.js';

export class ChatTools {
  constructor(row, { conn, onChange, onToast }) {
    this.conn = conn;
    this.onChange = onChange; // (tools) => Promise: stores the choice
    this.toast = onToast || (() => {});
    this.servers = [];
    this.choice = null; // the conversation's tools; null: every tool
    this.button = h('button', {
      type: 'button', class: 'icon-btn chat-tools-btn', 'data-testid': 'chat-tools-btn', hidden: true,
      'aria-label': 'Tools for this chat', title: 'Tools for this chat', 'aria-haspopup': 'true', 'aria-expanded': 'false',
    }, icon('tool'), h('span', { class: 'chat-tools-count', 'data-testid': 'chat-tools-count' }));
    this.menu = h('div', { class: 'chat-tools-menu', 'data-testid': 'chat-tools-menu', role: 'group', 'aria-label': 'Tools for this chat', hidden: true });
    row.append(this.menu);
    this.button.addEventListener('click', () => this.toggle());
    this.menu.addEventListener('change', (e) => this.changed(e.target));
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !this.menu.hidden) this.close(); });
    document.addEventListener('click', (e) => {
      if (!this.menu.hidden && !this.menu.contains(e.target) && !this.button.contains(e.target)) this.close();
    });
    conn.request('list_tools', {}).then((res) => {
      this.servers = (res.servers || []).filter((s) => (s.tools || []).length);
      this.render();
    }, () => {});
  }

  // set shows conversation's choice (null: every tool).
  set(tools) {
    this.choice = Array.isArray(tools) ? tools : null;
    this.render();
  }

  // value is the choice to send with a new chat: undefined for every tool.
  value() { return this.choice === null ? undefined : this.choice; }

  offered(server, tool) {
    return this.choice === null || this.choice.includes(server) || this.choice.includes(tool);
  }

  render() {
    this.button.hidden = this.servers.length === 0;
    const all = this.servers.flatMap((s) => s.tools.map((t) => [s.name, t]));
    const on = all.filter(([s, t]) => this.offered(s, t)).length;
    const count = this.button.querySelector('.chat-tools-count');
    count.textContent = on === all.length ? '' : `${on}/${all.length}`;
    this.button.dataset.narrowed = String(on !== all.length);
    this.button.title = on === all.length ? 'Tools for this chat: all' : `Tools for this chat: ${on} of ${all.length}`;
    this.menu.replaceChildren(h('p', { class: 'chat-tools-head' }, 'Tools this chat may use'),
      ...this.servers.map((s) => {
        const ticks = s.tools.map((t) => this.offered(s.name, t));
        const box = h('input', { type: 'checkbox', 'data-testid': 'chat-tool-server', 'data-server': s.name, checked: ticks.every(Boolean) });
        box.indeterminate = ticks.some(Boolean) && !ticks.every(Boolean);
        return h('fieldset', { class: 'chat-tools-server' },
          h('legend', null, h('label', null, box, ` ${s.name}`)),
          ...s.tools.map((t, i) => h('label', { class: 'chat-tool' },
            h('input', { type: 'checkbox', 'data-testid': 'chat-tool', 'data-server': s.name, 'data-tool': t, checked: ticks[i] }),
            ` ${t.startsWith(`${s.name}__`) ? t.slice(s.name.length + 2) : t}`)));
      }));
  }

  toggle() { if (this.menu.hidden) this.open(); else this.close(); }

  open() {
    this.render();
    this.menu.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.menu.querySelector('input')?.focus();
  }

  close() {
    this.menu.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }

  // changed reads the ticks after one changed and stores the choice.
  async changed(box) {
    if (box.dataset.testid === 'chat-tool-server') {
      for (const t of this.menu.querySelectorAll(`[data-testid="chat-tool"][data-server="${CSS.escape(box.dataset.server)}"]`)) t.checked = box.checked;
    }
    const choice = [];
    let everything = true;
    for (const s of this.servers) {
      const ticked = s.tools.filter((t) => this.menu.querySelector(`[data-testid="chat-tool"][data-server="${CSS.escape(s.name)}"][data-tool="${CSS.escape(t)}"]`)?.checked);
      if (ticked.length === s.tools.length) choice.push(s.name);
      else { everything = false; choice.push(...ticked); }
    }
    const before = this.choice;
    this.choice = everything ? null : choice;
    this.render();
    this.menu.querySelector(`[data-server="${CSS.escape(box.dataset.server)}"]${box.dataset.tool ? `[data-tool="${CSS.escape(box.dataset.tool)}"]` : '[data-testid="chat-tool-server"]'}`)?.focus();
    try {
      await this.onChange(everything ? ['*'] : choice);
    } catch (err) {
      this.choice = before;
      this.render();
      this.toast(`Could not change the chat's tools: ${err.message}`, 'error');
    }
  }

  dispose() { this.menu.remove(); this.button.remove(); }
}
