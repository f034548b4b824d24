// agentik's browser UI: the server renders the page (readable without
// JavaScript); this layer speaks the public WebSocket protocol to stream
// answers, keep tabs in sync and resume after reloads and network drops.
import { Conn } from './conn.js';
import { Chat, newID } from './chat.js';
import { Composer } from './composer.js';
import { Sidebar, UNTITLED } from './sidebar.js';
import { Search } from './search.js';
import { Branches } from './branch.js';
import { h, copyText, icon } from './dom.js';
import { rawText, streamingAnswer, userMessage } from './message.js';
import { ModelSettings } from './model.js';
import { Importer } from './import.js';
import { Agents } from './agents.js';
import { setAgentNames } from './message.js';
import { ResourceView } from './mcp.js';
import { McpApps } from './mcpapps.js';
import { Memory } from './memory.js';
import { ShareDialog } from './sharelink.js';
import { ProjectsNav } from './projects.js';
import { Inbox } from './inbox.js';
import { mountAdmin } from './admin.js';
import { Knowledge } from './knowledge.js';
import { rate } from './feedback.js';
import { refreshBudget, showBudget } from './budget.js';
import { Shortcuts } from './shortcuts.js';
import { Schedules } from './schedules.js';
import { People } from './people.js';
import { ProjectsPage } from './projects.js';
import { Settings } from './settings.js';

// PAGES are the management pages' views (web.managePage), by main's
// data-page: each starts once, as the page loads (a link away from one is
// a full load, so their document listeners never outlive it).
const PAGES = {
  schedules: (conn) => new Schedules(document, conn),
  settings: (conn) => { new Settings(document, conn); return new People(document, conn); },
  projects: (conn) => new ProjectsPage(document, conn),
};

const STATUS_LABEL = { connecting: 'Connecting…', online: 'Live', reconnecting: 'Reconnecting…', offline: 'Offline' };

class App {
  constructor() {
    this.boot = readBoot(document);
    this.sidebarEl = document.getElementById('sidebar');
    this.toasts = document.getElementById('toasts');
    this.dialog = document.getElementById('confirm-delete');
    this.pendingDelete = null; // the conversation the open dialog would delete
    this.dialog.addEventListener('close', () => this.onDialogClose());
    this.status = 'connecting';
    this.temp = false;
    this.chat = null;
    this.navSeq = 0; // counts navigate calls: the latest one wins
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.conn = new Conn(`${proto}//${location.host}/agentik/ws?pack=1`, {
      onOpen: () => this.onOpen(),
      onStatus: (s) => this.setStatus(s),
    });
    this.sidebar = new Sidebar(this.sidebarEl, {
      conn: this.conn,
      onDeleted: (id) => {
        if (this.chat && this.chat.id === id && this.chat.apiRequest) {
          // Its answer went to the API client: the page stays to be read.
          this.toast('The API request is answered, and its temporary conversation is gone.');
        } else if (this.chat && this.chat.id === id) {
          this.toast('This conversation was deleted.');
          this.navigate('/');
        }
      },
      onRenamed: (id, title) => {
        if (this.chat && this.chat.id === id) this.setTitle(title);
      },
      onUpdated: (id, ev) => {
        if (this.chat && this.chat.id === id) this.settings?.updated(ev);
        this.branches.onAgentEvent(ev);
      },
    });
    this.branches = new Branches({
      conn: this.conn,
      chat: () => this.chat,
      reload: () => this.navigate(location.pathname, false),
      toast: (m, k) => this.toast(m, k),
    });
    this.search = new Search(this.sidebarEl, { conn: this.conn });
    this.agents = new Agents({ conn: this.conn, sidebarEl: this.sidebarEl, toast: (m, k) => this.toast(m, k), onFilter: (slug) => this.sidebar.setFilter(slug) });
    setAgentNames((slug) => this.agents.name(slug));
    this.memory = new Memory({ conn: this.conn, toast: (m, k) => this.toast(m, k), reload: (href) => this.navigate(href || location.pathname + location.search, !!href) });
    this.inbox = new Inbox({ conn: this.conn, sidebarEl: this.sidebarEl, toast: (m, k) => this.toast(m, k) });
    this.knowledge = new Knowledge({ conn: this.conn, toast: (m, k) => this.toast(m, k), reload: () => this.navigate(location.pathname + location.search, false) });
    this.importer = new Importer(document.getElementById('import-dialog'), { toast: (m, k) => this.toast(m, k) });
    this.resourceView = new ResourceView(this.conn);
    this.apps = new McpApps({ conn: this.conn, conversation: () => this.main?.dataset.conversationId, send: (content) => this.chat.send(content) });
    this.shareDialog = new ShareDialog({ conn: this.conn, toast: (m, k) => this.toast(m, k) });
    this.projects = new ProjectsNav({ conn: this.conn, sidebarEl: this.sidebarEl, navigate: (href) => this.navigate(href), toast: (m, k) => this.toast(m, k) });
    this.shortcuts = new Shortcuts(document.getElementById('shortcuts-dialog'), {
      'new-chat': () => { this.navigate('/'); },
      search: () => this.search.focus(),
      'focus-composer': () => {
        if (!this.composer) return false;
        this.closeSidebar();
        this.composer.focus();
        return true;
      },
      stop: () => this.escape(),
      'copy-answer': () => { this.copyLastAnswer(); },
    });
    const main = document.getElementById('main');
    this.page = PAGES[main.dataset.page]?.(this.conn) || null;
    this.mount(main, this.boot);
    this.bind();
    this.conn.connect();
  }

  onOpen() {
    this.sidebar.subscribe();
    this.sidebar.refresh();
    this.projects.load();
    this.inbox.subscribe();
    this.agents.load();
    if (this.chat) this.chat.subscribe();
    this.page?.onOpen?.();
  }

  setStatus(s) {
    this.status = s;
    // Live state (tool servers, running dots) is only known while online.
    document.body.dataset.conn = s;
    const el = document.getElementById('connection');
    if (!el) return;
    el.dataset.state = s;
    el.querySelector('.conn-label').textContent = STATUS_LABEL[s] || s;
  }

  // mount wires a #main element (server-rendered) to its conversation.
  mount(main, boot) {
    this.main = main;
    this.boot = boot;
    this.temp = false;
    showBudget(main, boot.budget);
    const conv = boot.conversation;
    this.chat = conv ? this.newChat(conv) : null;
    this.sidebar.setCurrent(conv ? conv.id : null);
    // A page without a composer (a conversation not found) has nothing to send.
    const form = main.querySelector('#composer');
    this.composer = form && new Composer(form, {
      conn: this.conn,
      onSend: (content, knowledge) => this.send(content, knowledge),
      onStop: () => this.stop(),
      onToast: (m, k) => this.toast(m, k),
    });
    this.composer?.setRunning(!!(conv && conv.running));
    this.settings?.dispose();
    this.settings = form && new ModelSettings(form, {
      conn: this.conn,
      chatId: () => this.chat?.id || null,
      onToast: (m, k) => this.toast(m, k),
      // The chat's agent's instructions (a new chat's: the picked agent's),
      // else the server's system prompt, as agent.Runner.systemPromptOf
      // chooses.
      defaultPrompt: () => this.agents?.instructions(this.boot.conversation?.agent) || this.boot.system_prompt || '',
      // The reader's default model (their settings) for a new chat.
      defaultModel: () => this.boot.preferences?.model || '',
    });
    this.agents?.mount(main, !!conv);
    this.memory?.mount(main);
    this.inbox?.mount(main);
    mountAdmin(main, (m, k) => this.toast(m, k)); // the admin panel (/admin)
    this.knowledge?.mount(main);
    this.agents?.labels(main);
    this.setStatus(this.status);
    // The message box has focus on load where there is a keyboard; on a
    // touch screen focus would open the on-screen keyboard over the page.
    if (!matchMedia('(pointer: coarse)').matches) this.composer?.focus();
    document.body.dataset.ready = 'true';
    for (const b of main.querySelectorAll('[data-banner]')) if (dismissed(b)) b.hidden = true;
    // The sidebar (kept across navigations) names the open chat's model.
    const name = this.sidebarEl.querySelector('[data-testid="model"] .model-name');
    if (name && boot.model_name) name.textContent = boot.model_name;
    // A link to one message (a search result): show it.
    const target = /^#message-(.+)$/.exec(location.hash);
    if (target && this.chat) this.chat.reveal(decodeURIComponent(target[1]));
  }

  newChat(conv) {
    return new Chat({
      main: this.main,
      conn: this.conn,
      conv,
      onRunning: (id, r) => {
        this.sidebar.setRunning(id, r);
        if (this.chat && this.chat.id === id) this.composer?.setRunning(r);
        if (!r) this.branches.turnEnded(id, this.chat?.id === id && this.chat.branchTurn);
        if (!r) refreshBudget(this.conn, this.main, this.boot).catch(() => {});
      },
      onToast: (m, k) => this.toast(m, k),
    });
  }

  // send sends content, creating the conversation on the first message:
  // one create_conversation with the message, so a refused first send
  // (no model, content too large…) makes nothing and leaves no empty
  // chat behind. A temp chat is created, subscribed to, then sent to (its
  // events are not replayed); one whose first send is refused is dropped.
  async send(content, knowledge) {
    let created = null;
    const kb = await this.knowledgeIds(knowledge);
    if (this.chat && kb.length) await this.attachKnowledge(this.chat.id, kb);
    if (!this.chat) {
      // The question and its pending answer show at once, while the
      // conversation is created; the Chat's own replace them.
      const early = [userMessage({ type: 'user_message', content }, { pending: true }), streamingAnswer()];
      this.main.querySelector('#messages').append(early[0]);
      this.main.querySelector('#live').append(early[1]);
      const empty = this.main.querySelector('#empty-state');
      if (empty) empty.hidden = true;
      const fields = { ...this.settings.createFields(), ...this.agents.createFields(), ...(this.temp ? { temp: true } : {}), ...(kb.length ? { knowledge: kb } : {}) };
      const clientId = newID();
      if (!this.temp) Object.assign(fields, { content, client_id: clientId });
      let conv;
      try {
        conv = await this.conn.request('create_conversation', fields, { retry: false });
      } finally {
        early.forEach((el) => el.remove());
        if (empty && !this.chat) empty.hidden = false;
      }
      this.settings.created(conv);
      created = conv.id;
      history.pushState({}, '', `/c/${encodeURIComponent(conv.id)}`);
      this.main.dataset.conversationId = conv.id;
      this.main.querySelector('#chat-actions')?.removeAttribute('hidden');
      const exp = this.main.querySelector('#export');
      if (exp && !conv.temp) {
        exp.href = `/agentik/conversations/${encodeURIComponent(conv.id)}/export?format=markdown`;
        exp.hidden = false;
      }
      // Sent with it: the chat starts idle before its message, as one
      // made before a send, and the subscription replays the turn from
      // the message (its events make it run).
      this.chat = this.newChat(conv.send ? { ...conv, running: false, turn_seq: 0, last_seq: conv.send.seq - 1 } : { ...conv, last_seq: 0 });
      this.sidebar.upsert(conv);
      this.sidebar.setCurrent(conv.id);
      if (conv.send) this.chat.showSend(content, clientId);
      if (this.conn.status === 'online') this.chat.subscribe();
      if (conv.send) return;
    }
    try {
      await this.chat.send(content);
    } catch (err) {
      if (created && this.chat?.id === created) this.discard(created);
      throw err;
    }
  }

  // knowledgeIds are the knowledge bases a message's composer attached
  // (its documents travel in the message itself, as file parts).
  async knowledgeIds({ bases = [] } = {}) {
    return [...bases];
  }

  // attachKnowledge adds bases to a conversation's.
  async attachKnowledge(id, ids) {
    const c = await this.conn.request('get_conversation', { conversation_id: id });
    const knowledge = [...new Set([...(c.knowledge || []), ...ids])];
    await this.conn.request('update_conversation', { conversation_id: id, knowledge }, { retry: false });
  }

  // discard undoes the creation of a conversation whose first send failed.
  discard(id) {
    this.chat.dispose();
    this.chat = null;
    this.sidebar.item(id)?.remove();
    this.sidebar.updateEmpty();
    this.sidebar.setCurrent(null);
    delete this.main.dataset.conversationId;
    delete this.main.dataset.subscribed;
    this.main.querySelector('#chat-actions')?.setAttribute('hidden', '');
    this.main.querySelector('#export')?.setAttribute('hidden', '');
    history.replaceState({}, '', '/');
    this.conn.request('delete', { conversation_id: id }, { retry: false }).catch(() => {});
  }

  // escape is the Escape key: it closes the sidebar drawer, else stops
  // the answer; false when it did neither (a dialog has the key).
  escape() {
    if (document.querySelector('dialog[open]')) return false;
    if (document.body.dataset.sidebar === 'open') { this.closeSidebar(); return true; }
    if (!this.chat || !this.chat.running) return false;
    this.stop();
    return true;
  }

  // copyLastAnswer copies the conversation's last answer, as its Copy
  // button does.
  async copyLastAnswer() {
    const answers = this.main.querySelectorAll('#messages [data-type="assistant_message"]');
    const msg = answers[answers.length - 1];
    if (!msg) { this.toast('There is no answer to copy yet.'); return; }
    const ok = await copyText(messageText(msg));
    this.toast(ok ? 'Copied the last answer.' : 'Could not copy the answer.', ok ? 'info' : 'error');
  }

  stop() {
    if (!this.chat || !this.chat.running) return;
    this.chat.interrupt().catch((err) => this.toast(`Could not stop: ${err.message}`, 'error'));
  }

  setTitle(title) {
    const t = title || UNTITLED;
    const el = this.main.querySelector('#chat-title');
    if (el) el.textContent = t;
    document.title = `${t} · agentik`;
  }

  // navigate swaps in the server-rendered #main of another page, so history
  // has one renderer (templ) and the socket stays open. The last navigate
  // started wins: one still fetching when another starts is dropped, so an
  // older page (a re-render from mid-turn, a conversation clicked before
  // another) never replaces a newer one that arrived first.
  async navigate(href, push = true) {
    const seq = ++this.navSeq;
    let doc;
    try {
      const res = await fetch(href, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
      if (!res.ok && res.status !== 404) throw new Error(String(res.status));
      const text = await res.text();
      if (seq !== this.navSeq) return;
      doc = new DOMParser().parseFromString(text, 'text/html');
    } catch {
      if (seq === this.navSeq) location.href = href;
      return;
    }
    const next = doc.getElementById('main');
    if (!next) { location.href = href; return; }
    if (this.chat) this.chat.dispose();
    this.chat = null;
    const main = document.adoptNode(next);
    this.main.replaceWith(main);
    if (push) history.pushState({}, '', href);
    document.title = doc.title;
    this.mount(main, readBoot(doc));
    if (this.chat && this.conn.status === 'online') this.chat.subscribe();
    this.closeSidebar();
    this.composer?.focus();
  }

  startTemp() {
    const go = this.chat || location.pathname !== '/' ? this.navigate('/') : Promise.resolve();
    go.then(() => {
      this.temp = true;
      this.main.dataset.temp = 'true';
      this.setTitle('Temporary chat');
      this.main.querySelector('#temp-badge')?.removeAttribute('hidden');
      const empty = this.main.querySelector('#empty-state');
      if (empty) {
        empty.querySelector('.empty-title').textContent = 'Temporary chat';
        empty.querySelector('.empty-text').textContent = 'This chat is not saved: it is gone when the server restarts or after a while idle.';
      }
      this.composer?.focus();
    });
  }

  rename() {
    if (!this.chat) return;
    const title = this.main.querySelector('#chat-title');
    const input = h('input', { class: 'title-input', 'aria-label': 'Conversation title', maxlength: '200', 'data-testid': 'title-input' });
    input.value = title.textContent;
    title.hidden = true;
    title.after(input);
    input.focus();
    input.select();
    let done = false;
    const finish = (commit) => {
      if (done) return;
      done = true;
      const v = input.value.trim();
      input.remove();
      title.hidden = false;
      if (commit && v && v !== title.textContent) {
        this.setTitle(v);
        this.conn.request('rename', { conversation_id: this.chat.id, title: v })
          .catch((err) => this.toast(`Could not rename: ${err.message}`, 'error'));
      }
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); finish(true); }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); finish(false); }
    });
    input.addEventListener('blur', () => finish(true));
  }

  confirmDelete() {
    if (!this.chat) return;
    const id = this.chat.id;
    this.dialog.querySelector('.dialog-title-name').textContent = this.main.querySelector('#chat-title').textContent;
    this.dialog.returnValue = '';
    this.pendingDelete = id;
    this.dialog.showModal();
  }

  // onDialogClose deletes when the dialog closed with "delete". It is bound
  // once: a close event is dispatched after the dialog closed, so one from
  // an earlier "Cancel" can arrive after the dialog was opened again; it is
  // recognised by the dialog being open and ignored.
  onDialogClose() {
    if (this.dialog.open) return;
    const id = this.pendingDelete;
    this.pendingDelete = null;
    if (!id || this.dialog.returnValue !== 'delete') return;
    this.conn.request('delete', { conversation_id: id })
      .then(() => {
        this.sidebar.item(id)?.remove();
        this.sidebar.updateEmpty();
        if (this.chat && this.chat.id === id) this.navigate('/');
      })
      .catch((err) => this.toast(`Could not delete: ${err.message}`, 'error'));
  }

  openSidebar() {
    document.body.dataset.sidebar = 'open';
    this.main.querySelector('[data-action="open-sidebar"]')?.setAttribute('aria-expanded', 'true');
    this.sidebarEl.querySelector('a, button')?.focus();
  }

  closeSidebar() {
    if (document.body.dataset.sidebar !== 'open') return;
    delete document.body.dataset.sidebar;
    this.main.querySelector('[data-action="open-sidebar"]')?.setAttribute('aria-expanded', 'false');
  }

  toast(message, kind = 'info') {
    const t = h('div', { class: `toast toast-${kind}`, role: kind === 'error' ? 'alert' : 'status', 'data-testid': 'toast' }, message);
    this.toasts.append(t);
    setTimeout(() => t.remove(), 6000);
  }

  async copy(btn, text) {
    const ok = await copyText(text);
    btn.classList.toggle('copied', ok);
    const label = btn.querySelector('span');
    if (label) label.textContent = ok ? 'Copied' : 'Copy failed';
    btn.replaceChildren(icon(ok ? 'check' : 'copy'), ...(label ? [label] : []));
    setTimeout(() => {
      btn.classList.remove('copied');
      btn.replaceChildren(icon('copy'), ...(label ? [Object.assign(label, { textContent: 'Copy' })] : []));
    }, 1500);
  }

  // actAsAdmin opens the composer of another user's chat to an admin
  // who chose to write there (web.OwnerNote): her sends carry
  // act_as_admin, without which the server refuses them (chat.js).
  actAsAdmin(button) {
    const box = this.main.querySelector('#act-as');
    if (!box) return;
    box.hidden = false;
    this.main.dataset.actAs = 'true';
    button.hidden = true;
    this.composer?.focus();
  }

  bind() {
    document.addEventListener('click', (e) => {
      if (e.defaultPrevented || e.button !== 0) return;
      const action = e.target.closest('[data-action]');
      if (action) {
        const a = action.dataset.action;
        if (a === 'copy-code') {
          this.copy(action, action.closest('.code-block').querySelector('pre').textContent);
        } else if (a === 'copy-message') {
          this.copy(action, messageText(action.closest('.msg')));
        } else if (a === 'temp-chat') { e.preventDefault(); this.startTemp(); }
        else if (a === 'rename') this.rename();
        else if (a === 'rate') {
          rate(this.conn, action, this.chat?.id).catch((err) => this.toast(`Could not rate the answer: ${err.message}`, 'error'));
        }
        else if (a === 'attach-resource') { // a resource a tool returned (its card), to the next message
          const { server, resource: uri, name } = action.dataset;
          if (this.composer) { this.composer.attachResource({ server, uri, name: name || uri }); this.composer.focus(); }
        }
        else if (a === 'dismiss-banner') dismiss(action.closest('[data-banner]'));
        else if (a === 'act-as-admin') this.actAsAdmin(action);
        else if (a === 'load-earlier') this.chat?.loadEarlier(action);
        else if (a === 'more-conversations') this.sidebar.more();
        else if (a === 'pin' || a === 'archive') {
          this.sidebar.file(action.closest('.conv-item').dataset.id, a === 'pin' ? 'pinned' : 'archived')
            .catch((err) => this.toast(`Could not ${a} the chat: ${err.message}`, 'error'));
        } else if (a === 'toggle-archived') this.sidebar.toggleArchived();
        else if (a === 'delete') this.confirmDelete();
        else if (a === 'import') { this.closeSidebar(); this.importer.open(); }
        else if (a === 'revert-memory') this.memory.revert(action);
        else if (a === 'memory-save' || a === 'memory-clear') this.memory.act(a, action);
        else if (a === 'knowledge-delete' || a === 'knowledge-remove-file') this.knowledge.act(a, action);
        else if (a === 'inbox-approve' || a === 'inbox-deny') this.inbox.decide(action, a === 'inbox-approve' ? 'approve' : 'deny');
        else if (a === 'open-sidebar') this.openSidebar();
        else if (a === 'new-agent') this.agents.openEditor(null);
        else if (a === 'edit-agent') this.agents.openEditor(this.agents.list.find((d) => d.slug === action.closest('[data-slug]').dataset.slug) || null);
        else if (a === 'close-sidebar') this.closeSidebar();
        else if (a === 'prompt') {
          const p = this.main.querySelector('#prompt');
          p.value = action.dataset.prompt || action.textContent;
          p.dispatchEvent(new Event('input'));
          p.focus();
          if (action.dataset.send) p.form?.requestSubmit(); // an agent's starter sends itself
        }
        if (a !== 'new-chat') return;
      }
      const link = e.target.closest('a[href]');
      if (!link || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || link.target) return;
      const url = new URL(link.href, location.href);
      if (url.origin !== location.origin || !(url.pathname === '/' || url.pathname.startsWith('/c/'))) return;
      if (this.page || this.main.dataset.page === 'agents') return; // a management page's view stays with its page
      e.preventDefault();
      this.navigate(url.pathname + url.search + url.hash);
    });
    document.getElementById('scrim')?.addEventListener('click', () => this.closeSidebar());
    window.addEventListener('popstate', () => this.navigate(location.pathname, false));
    document.addEventListener('dragover', (e) => {
      if ([...(e.dataTransfer?.types || [])].includes('Files')) e.preventDefault();
    });
    // Drop an image or a document anywhere on the chat to attach it.
    // On the knowledge page, onto a base: into that base.
    document.addEventListener('drop', (e) => {
      const files = [...(e.dataTransfer?.files || [])];
      if (!files.length) return;
      e.preventDefault();
      const base = e.target.closest?.('[data-testid="knowledge-base"]');
      if (base) this.knowledge.upload(base, files);
      else files.forEach((f) => this.composer?.addFile(f));
    });
  }
}

// A dismissed banner stays dismissed (in this browser) until its text
// changes: a new notice shows again.
const DISMISSED = 'agentik.dismissed.';

function dismissed(b) {
  try { return localStorage.getItem(DISMISSED + b.dataset.banner) === b.textContent.trim(); } catch { return false; }
}

function dismiss(b) {
  if (!b) return;
  b.hidden = true;
  try { localStorage.setItem(DISMISSED + b.dataset.banner, b.textContent.trim()); } catch { /* private mode */ }
  document.getElementById('prompt')?.focus();
}

// messageText is what copying a message takes: an answer's markdown
// source, else its text.
function messageText(msg) {
  const md = msg.querySelector('.msg-body .md');
  return (md && (rawText.get(md) ?? md.textContent)) || msg.querySelector('.msg-body')?.textContent || '';
}

function readBoot(doc) {
  try {
    return JSON.parse(doc.getElementById('boot').textContent) || {};
  } catch {
    return {};
  }
}

new App();
