// Sidebar is the live list of conversations and tool servers. It follows
// the "agent" stream live (no cursor: it reloads the list on every connect),
// so conversations created, renamed, deleted or started from any tab or
// client show up at once, with a running indicator (turn_started and
// turn_ended) and a "Needs approval" mark while a tool call waits for a
// decision (waiting), without receiving every token of every conversation.
import { clone, setAttrs } from './message.js';

export const UNTITLED = 'New chat';
const PAGE = 200; // conversations per page, as the server renders the first

export class Sidebar {
  constructor(root, { conn, onDeleted, onRenamed, onUpdated }) {
    this.root = root;
    this.conn = conn;
    this.list = root.querySelector('#conv-list');
    this.tools = root.querySelector('#tool-servers');
    this.onDeleted = onDeleted || (() => {});
    this.onRenamed = onRenamed || (() => {});
    this.onUpdated = onUpdated || (() => {});
    this.current = null;
    // The list shows the most recent conversations; the rest are paged in
    // when the "Show more" button at its end scrolls into view.
    this.moreBtn = root.querySelector('[data-testid="more-conversations"]');
    this.total = Number(this.moreBtn?.dataset.total || 0);
    this.loading = false;
    if (this.moreBtn) {
      new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) this.more();
      }, { root: root.querySelector('.conv-nav') }).observe(this.moreBtn);
    }
  }

  // more appends the next page of older conversations. Its offset is the
  // number listed: conversations created or deleted live are in the list
  // too, so the offset moves with them; ids already listed are skipped.
  async more() {
    if (this.loading || this.list.children.length >= this.total) return;
    this.loading = true;
    try {
      const { conversations, total } = await this.conn.request('list_conversations', { offset: this.list.children.length, limit: PAGE });
      for (const c of conversations || []) if (!this.item(c.id)) this.list.append(this.render(c));
      this.setTotal(total);
    } catch {
      // The button stays; scrolling to it again retries.
    } finally {
      this.loading = false;
    }
  }

  setTotal(total) {
    this.total = Number(total || 0);
    if (this.moreBtn) this.moreBtn.hidden = this.list.children.length >= this.total;
  }

  item(id) {
    return [...this.list.children].find((li) => li.dataset.id === id) || null;
  }

  // render fills the templ-rendered row template (web/sidebar.templ).
  render(c) {
    const li = clone('tpl-conversation');
    setAttrs(li, { 'data-id': c.id, 'data-agent': c.agent || 'agentik', 'data-child': c.parent ? 'true' : null, 'data-running': String(!!c.running), 'data-waiting': String((c.waiting || []).length > 0), 'data-temp': c.temp ? 'true' : null });
    li.hidden = !!this.filter && li.dataset.agent !== this.filter;
    const a = li.querySelector('a');
    setAttrs(a, { href: `/c/${encodeURIComponent(c.id)}`, 'aria-current': c.id === this.current ? 'page' : null });
    li.querySelector('.conv-title').textContent = c.title || UNTITLED;
    if (!c.temp) li.querySelector('.conv-badge')?.remove();
    return li;
  }

  upsert(c, { top = true } = {}) {
    const old = this.item(c.id);
    const li = this.render(c);
    if (old) old.remove();
    if (top) this.list.prepend(li);
    else this.list.append(li);
    this.updateEmpty();
  }

  // setFilter shows only the conversations of agent slug ("" for all).
  setFilter(slug) {
    this.filter = slug;
    for (const li of this.list.children) li.hidden = !!slug && li.dataset.agent !== slug;
  }

  updateEmpty() {
    this.root.dataset.empty = String(this.list.children.length === 0);
  }

  setCurrent(id) {
    this.current = id;
    for (const li of this.list.children) {
      const a = li.querySelector('a');
      if (li.dataset.id === id) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  setRunning(id, running) {
    const li = this.item(id);
    if (!li) return;
    li.dataset.running = String(running);
    if (running && li !== this.list.firstElementChild) this.list.prepend(li);
  }

  // setWaiting marks a conversation whose tool call waits for a decision
  // (the badge is web/sidebar.templ's; CSS shows it).
  setWaiting(id, waiting) {
    const li = this.item(id);
    if (li) li.dataset.waiting = String(waiting);
  }

  // refresh reloads the whole list (after every connect).
  async refresh() {
    try {
      // As many as are listed now, so pages already loaded stay.
      const limit = Math.min(1000, Math.max(PAGE, this.list.children.length));
      const { conversations, total } = await this.conn.request('list_conversations', { limit });
      this.list.replaceChildren(...(conversations || []).map((c) => this.render(c)));
      this.setTotal(total);
      this.updateEmpty();
    } catch {
      // The next connect tries again.
    }
  }

  subscribe() {
    this.conn.subscribe({ stream: 'agent' }, (f) => {
      if (f.type === 'event') this.onEvent(f.event);
      else if (f.type === 'resync') { this.subscribe(); this.refresh(); }
    }).catch(() => {});
  }

  onEvent(ae) {
    if (!ae) return;
    if (ae.type === 'agent') {
      const ev = ae.event || {};
      switch (ev.type) {
        case 'created':
          this.conn.request('get_conversation', { conversation_id: ev.conversation_id })
            .then((c) => this.upsert(c), () => this.upsert({ id: ev.conversation_id, title: ev.title }));
          break;
        case 'renamed': {
          const li = this.item(ev.conversation_id);
          if (li) li.querySelector('.conv-title').textContent = ev.title || UNTITLED;
          this.onRenamed(ev.conversation_id, ev.title);
          break;
        }
        case 'deleted':
          this.item(ev.conversation_id)?.remove();
          this.updateEmpty();
          this.onDeleted(ev.conversation_id);
          break;
        case 'updated': // a conversation's settings (model.js)
          this.onUpdated(ev.conversation_id, ev);
          break;
        case 'tool_server':
          if (ev.server) this.setToolServer(ev.server);
          break;
        case 'resource_updated': // a resource a message attached changed (mcp.js)
          document.dispatchEvent(new CustomEvent('resource-updated', { detail: ev.resource }));
          break;
        case 'turn_started':
          this.setRunning(ev.conversation_id, true);
          break;
        case 'turn_ended':
          this.setRunning(ev.conversation_id, false);
          this.setWaiting(ev.conversation_id, false);
          break;
        case 'waiting':
          this.setWaiting(ev.conversation_id, (ev.waiting || []).length > 0);
          break;
        default:
      }
    }
  }

  // setToolServer updates one tool server's row (cloned from web/sidebar.templ).
  setToolServer(s) {
    if (!this.tools) return;
    const ul = this.tools.querySelector('ul');
    let li = [...ul.children].find((x) => x.dataset.name === s.name);
    const row = clone('tpl-tool-server');
    setAttrs(row, { 'data-name': s.name, 'data-state': s.state });
    row.querySelector('.ts-name').textContent = s.name;
    row.querySelector('.ts-state').textContent = s.state;
    row.querySelector('.ts-count').textContent = String((s.tools || []).length);
    if (s.error) row.querySelector('.ts-error').textContent = s.error;
    else row.querySelector('.ts-error').remove();
    const signIn = row.querySelector('.ts-sign-in');
    if (s.sign_in_url) {
      signIn.href = s.sign_in_url;
      signIn.textContent = `Sign in to ${s.name}`;
    } else {
      signIn.remove();
      // A live event is everyone's: each user's own link comes with list_tools.
      if (s.state === 'auth_required') {
        this.conn.request('list_tools', {}).then((r) => {
          const mine = (r.servers || []).find((x) => x.name === s.name);
          if (mine?.sign_in_url) this.setToolServer(mine);
        }, () => {});
      }
    }
    if (li) li.replaceWith(row);
    else ul.append(row);
    li = row;
    const all = [...ul.children];
    const bad = all.filter((x) => x.dataset.state === 'failed').length;
    const ready = all.filter((x) => x.dataset.state === 'ready').length;
    this.tools.dataset.state = bad ? 'failed' : ready === all.length ? 'ready' : 'partial';
    this.tools.hidden = false;
    this.tools.querySelector('.tools-count').textContent = `${ready}/${all.length} ready`;
  }
}
