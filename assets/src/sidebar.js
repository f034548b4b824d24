// Sidebar is the live list of conversations and tool servers. It follows
// the "agent" stream live (no cursor: it reloads the list on every connect),
// so conversations created, renamed, deleted or started from any tab or
// client show up at once, with a running indicator (turn_started and
// turn_ended) and a "Needs approval" mark while a tool call waits for a
// decision (waiting), without receiving every token of every conversation.
import { clone, setAttrs } from './message.js';
import { UNTITLED } from './rules.js';

export { UNTITLED };
const PAGE = 200; // conversations per page, as the server renders the first
const DAY = 24 * 60 * 60 * 1000;

// groupOf names the sidebar group of a row: the pinned and the archived
// apart, the rest by the day of their last change in the reader's time
// zone (which the server does not know, so this is computed here).
export function groupOf({ pinned, archived, updated }, now = new Date()) {
  if (archived) return 'Archived';
  if (pinned) return 'Pinned';
  const t = new Date(updated);
  if (Number.isNaN(t.getTime())) return 'Today'; // a row that arrived without a date is new
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const days = Math.ceil((midnight - t.getTime()) / DAY); // 0: today, 1: yesterday…
  if (days <= 0) return 'Today';
  if (days === 1) return 'Yesterday';
  if (days <= 7) return 'Previous 7 days';
  if (days <= 30) return 'Previous 30 days';
  return 'Older';
}

// rank orders rows as the server lists them: archived last, pinned first.
const rank = (li) => (li.dataset.archived === 'true' ? 2 : 0) + (li.dataset.pinned === 'true' ? 0 : 1);

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
    // fetching holds the conversations whose row is being read after their
    // created event: an event of theirs that comes meanwhile (a first-line
    // title, waiting) finds no row, so the row is read again once the
    // first read is in ('dirty'), or not placed at all ('deleted').
    this.fetching = new Map();
    // The list shows the most recent conversations; the rest are paged in
    // when the "Show more" button at its end scrolls into view.
    this.moreBtn = root.querySelector('[data-testid="more-conversations"]');
    this.total = Number(this.moreBtn?.dataset.total || 0);
    this.loading = false;
    this.archivedBtn = root.querySelector('[data-testid="archived-toggle"]');
    this.regroup();
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
      const { conversations, total } = await this.conn.request('list_conversations', { mine: true, offset: this.list.children.length, limit: PAGE });
      for (const c of conversations || []) if (!this.item(c.id)) this.list.append(this.render(c));
      this.setTotal(total);
      this.regroup();
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
    setAttrs(li, {
      'data-id': c.id, 'data-agent': c.agent || 'agentik', 'data-child': c.parent ? 'true' : null, 'data-running': String(!!c.running),
      'data-waiting': String((c.waiting || []).length > 0), 'data-temp': c.temp ? 'true' : null,
      'data-updated': c.updated_at || new Date().toISOString(), 'data-pinned': String(!!c.pinned), 'data-archived': String(!!c.archived),
      'data-project': c.project || '', // projects.js lists it in its project's section
    });
    li.querySelector('.conv-pin')?.setAttribute('aria-pressed', String(!!c.pinned));
    li.querySelector('.conv-archive')?.setAttribute('aria-pressed', String(!!c.archived));
    li.hidden = !!this.filter && li.dataset.agent !== this.filter;
    const a = li.querySelector('a');
    setAttrs(a, { href: `/c/${encodeURIComponent(c.id)}`, 'aria-current': c.id === this.current ? 'page' : null });
    li.querySelector('.conv-title').textContent = c.title || UNTITLED;
    if (c.api_request) li.querySelector('.conv-badge')?.replaceWith(clone('tpl-api-badge'));
    else if (!c.temp) li.querySelector('.conv-badge')?.remove();
    return li;
  }

  upsert(c) {
    this.item(c.id)?.remove();
    this.place(this.render(c));
    this.updateEmpty();
  }

  // place puts a row where the server's order has it: by rank (pinned,
  // the rest, archived), then most recently updated first.
  place(li) {
    li.remove();
    const r = rank(li);
    const at = [...this.list.children].find((s) => rank(s) > r || (rank(s) === r && Date.parse(s.dataset.updated) <= Date.parse(li.dataset.updated)));
    this.list.insertBefore(li, at || null);
    this.regroup();
  }

  // regroup names each group at its first row and counts the archived
  // rows for their toggle.
  regroup() {
    const now = new Date();
    let last = null;
    let archived = 0;
    for (const li of this.list.children) {
      if (li.dataset.project) continue; // in its project's section (projects.js)
      const g = groupOf({ pinned: li.dataset.pinned === 'true', archived: li.dataset.archived === 'true', updated: li.dataset.updated }, now);
      const head = li.querySelector('.conv-group');
      if (head) head.textContent = g === last ? '' : g;
      last = g;
      if (g === 'Archived') archived++;
    }
    // With the last one restored the archive closes: the next chat
    // archived leaves the list as the first did.
    if (archived === 0) delete this.list.dataset.showArchived;
    if (this.archivedBtn) {
      this.archivedBtn.hidden = archived === 0;
      const open = this.list.dataset.showArchived === 'true';
      this.archivedBtn.textContent = open ? 'Hide archived' : `Show archived (${archived})`;
      this.archivedBtn.setAttribute('aria-expanded', String(open));
    }
  }

  // toggleArchived shows or hides the archived rows.
  toggleArchived() {
    this.list.dataset.showArchived = String(this.list.dataset.showArchived !== 'true');
    this.regroup();
  }

  // file pins or archives a conversation (what: 'pinned' or 'archived'),
  // or undoes it; the updated event moves its row, in every tab.
  file(id, what) {
    const li = this.item(id);
    if (!li) return Promise.resolve();
    return this.conn.request('update_conversation', { conversation_id: id, [what]: li.dataset[what] !== 'true' });
  }

  // filed applies an updated event's pinned and archived to the row.
  filed(ev) {
    const li = this.item(ev.conversation_id);
    if (li && ev.project !== undefined) li.dataset.project = ev.project || ''; // projects.js
    if (!li || (ev.pinned === undefined && ev.archived === undefined)) return;
    if (ev.pinned !== undefined) { li.dataset.pinned = String(!!ev.pinned); li.querySelector('.conv-pin')?.setAttribute('aria-pressed', String(!!ev.pinned)); }
    if (ev.archived !== undefined) { li.dataset.archived = String(!!ev.archived); li.querySelector('.conv-archive')?.setAttribute('aria-pressed', String(!!ev.archived)); }
    this.place(li);
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
    if (running) { li.dataset.updated = new Date().toISOString(); this.place(li); }
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
      const { conversations, total } = await this.conn.request('list_conversations', { mine: true, limit });
      this.list.replaceChildren(...(conversations || []).map((c) => this.render(c)));
      this.setTotal(total);
      this.regroup();
      this.updateEmpty();
    } catch {
      // The next connect tries again.
    }
  }

  subscribe() {
    this.conn.subscribe({ stream: 'agent', mine: true }, (f) => {
      if (f.type === 'event') this.onEvent(f.event);
      else if (f.type === 'resync') { this.subscribe(); this.refresh(); }
    }).catch(() => {});
  }

  // fetchRow reads a created conversation and places its row, again when
  // one of its events came while it was read (see fetching).
  fetchRow(id, title) {
    this.fetching.set(id, 'clean');
    this.conn.request('get_conversation', { conversation_id: id })
      .then((c) => this.fetching.get(id) !== 'deleted' && this.upsert(c),
        () => this.fetching.get(id) !== 'deleted' && this.upsert({ id, title }))
      .finally(() => {
        const state = this.fetching.get(id);
        this.fetching.delete(id);
        if (state === 'dirty') this.fetchRow(id, title);
      });
  }

  onEvent(ae) {
    if (!ae) return;
    if (ae.type === 'agent') {
      const ev = ae.event || {};
      if (ev.type !== 'created' && this.fetching.has(ev.conversation_id) && this.fetching.get(ev.conversation_id) !== 'deleted') {
        this.fetching.set(ev.conversation_id, ev.type === 'deleted' ? 'deleted' : 'dirty');
      }
      switch (ev.type) {
        case 'created':
          this.fetchRow(ev.conversation_id, ev.title);
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
          this.regroup();
          this.onDeleted(ev.conversation_id);
          break;
        case 'updated': // a conversation's settings (model.js), or its filing
          this.filed(ev);
          this.onUpdated(ev.conversation_id, ev);
          break;
        case 'tool_server':
          if (ev.server) this.setToolServer(ev.server);
          break;
        case 'file_status': // a file's ingestion (knowledge.js, composer.js)
          document.dispatchEvent(new CustomEvent('file-status', { detail: ev.file }));
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
