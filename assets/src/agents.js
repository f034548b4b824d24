// Agents: the picker of a new chat (with the agent's starters), the agent
// editor (instructions, model, tools chosen from the live tool list), the
// sidebar filter by agent, agents' names on answers, and a delegation's
// live view inside its tool card. Everything goes through the public ops
// list_agents, create_agent, update_agent, list_models, list_tools and
// subscribe.
import { h } from './dom.js';
import { clone, nameOfAgent } from './message.js';

// The markup of the picker, the editor and a delegation's view is
// web/agents.templ's, cloned from its <template> elements.

export const DEFAULT_AGENT = 'agentik';

// slugOf is the slug a name makes, as the server makes it when none is
// given (agent.SlugOf): ASCII letters and digits lowercased, every other
// run one hyphen, at most 40.
export function slugOf(name) {
  const parts = String(name).toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  return parts.join('-').slice(0, 40).replace(/-+$/, '');
}

export class Agents {
  constructor({ conn, sidebarEl, onFilter, toast }) {
    this.conn = conn;
    this.toast = toast || (() => {});
    this.onFilter = onFilter || (() => {});
    this.list = [];
    this.selected = DEFAULT_AGENT;
    this.main = null;
    this.filterEl = sidebarEl.querySelector('#agent-filter');
    this.filterEl?.addEventListener('change', () => this.onFilter(this.filterEl.value));
  }

  name(slug) {
    return this.list.find((a) => a.slug === slug)?.name || slug;
  }

  // instructions are agent slug's system prompt ("" when it has none, or
  // is not listed); without a slug, the picked agent's (a new chat's).
  instructions(slug) {
    const s = slug || (this.main ? this.selected : DEFAULT_AGENT);
    return this.list.find((a) => a.slug === s)?.instructions || '';
  }

  // load reads the agents and updates everything that shows them.
  async load() {
    try {
      const { agents } = await this.conn.request('list_agents', {});
      this.list = agents || [];
    } catch (err) {
      this.toast(`Could not load agents: ${err.message}`, 'error');
      return;
    }
    if (!this.list.some((a) => a.slug === this.selected)) this.selected = DEFAULT_AGENT;
    this.renderFilter();
    this.labels(document);
    if (this.main) this.renderPicker();
  }

  renderFilter() {
    const el = this.filterEl;
    if (!el) return;
    const v = el.value;
    el.replaceChildren(h('option', { value: '' }, 'All agents'), ...this.list.map((a) => h('option', { value: a.slug }, a.name)));
    el.value = this.list.some((a) => a.slug === v) ? v : '';
    el.hidden = this.list.length < 2;
  }

  // labels shows agents' names on the answers under root.
  labels(root) {
    for (const el of root.querySelectorAll('.msg-agent[data-agent], .delegate-agent[data-agent]')) el.textContent = this.name(el.dataset.agent);
  }

  // mount attaches the picker to a new chat's empty state (none on a
  // conversation's page).
  mount(main, hasChat) {
    this.main = hasChat ? null : main;
    // A new chat starts with the default agent, or the one the link names
    // (/?agent=slug: the agents page's New chat).
    if (!hasChat) this.selected = new URLSearchParams(location.search).get('agent') || DEFAULT_AGENT;
    if (this.main) this.renderPicker();
  }

  // createFields are what a new chat is created with.
  createFields() {
    return this.main && this.selected !== DEFAULT_AGENT ? { agent: this.selected } : {};
  }

  renderPicker() {
    const empty = this.main?.querySelector('#empty-state');
    if (!empty) return;
    const tpl = clone('tpl-agent-picker'); // web.AgentPicker
    let box = empty.querySelector('.agent-picker');
    if (!box) {
      box = tpl.cloneNode(false);
      empty.querySelector('.empty-text')?.after(box);
      const sugg = empty.querySelector('.suggestions');
      if (sugg) this.defaultSuggestions = [...sugg.children].map((c) => c.cloneNode(true));
    }
    const chipTpl = tpl.querySelector('[data-testid="agent-option"]');
    const chips = this.list.map((a) => {
      const b = chipTpl.cloneNode(true);
      b.dataset.slug = a.slug;
      b.setAttribute('aria-pressed', String(a.slug === this.selected));
      b.title = a.description || a.name;
      b.textContent = a.name;
      b.addEventListener('click', () => { this.selected = a.slug; this.renderPicker(); });
      return b;
    });
    const add = tpl.querySelector('[data-testid="new-agent"]');
    add.addEventListener('click', () => this.openEditor(null));
    const cur = this.list.find((a) => a.slug === this.selected);
    const edit = cur && !cur.read_only ? tpl.querySelector('[data-testid="edit-agent"]') : null;
    edit?.addEventListener('click', () => this.openEditor(cur));
    box.replaceChildren(...chips, add, ...(edit ? [edit] : [])); // replaceChildren writes a null as "null"
    this.renderStarters(cur);
  }

  // renderStarters shows the chosen agent's starters as the suggestions.
  renderStarters(cur) {
    const sugg = this.main?.querySelector('#empty-state .suggestions');
    if (!sugg) return;
    const starters = cur && cur.slug !== DEFAULT_AGENT ? cur.starters || [] : [];
    if (!starters.length) {
      if (this.defaultSuggestions) sugg.replaceChildren(...this.defaultSuggestions.map((c) => c.cloneNode(true)));
      return;
    }
    // A starter sends itself (app.js: data-send).
    sugg.replaceChildren(...starters.map((s) => h('button', { type: 'button', class: 'suggestion', 'data-action': 'prompt', 'data-send': 'true', 'data-prompt': s, 'data-testid': 'starter' },
      h('strong', null, cur.name), s)));
  }

  // openEditor opens the agent editor: a new agent (def null) or an edit.
  async openEditor(def) {
    let models = [];
    let tools = [];
    try {
      const [m, t] = await Promise.all([this.conn.request('list_models', {}), this.conn.request('list_tools', {})]);
      models = (m.models || []).map((x) => x.id);
      for (const s of t.servers || []) tools.push(...(s.tools || []));
    } catch (err) {
      this.toast(`Could not load models and tools: ${err.message}`, 'error');
    }
    const d = def || { slug: '', name: '', description: '', instructions: '', model: '', tools: [], starters: [], visibility: 'private' };
    const dlg = clone('tpl-agent-editor'); // web.AgentEditor
    const form = dlg.querySelector('form');
    const f = (name) => form.elements.namedItem(name);
    const [slug, name, desc, instr, model, starters, vis] = ['slug', 'name', 'description', 'instructions', 'model', 'starters', 'visibility'].map(f);
    if (def) {
      dlg.querySelector('.dialog-title').textContent = `Edit ${d.name}`;
      dlg.querySelector('[data-testid="agent-save"]').textContent = 'Save';
      slug.disabled = true;
    } else {
      // The slug follows the name until the person types one.
      name.addEventListener('input', () => { if (!slug.dataset.edited) slug.value = slugOf(name.value); });
      slug.addEventListener('input', () => { if (slug.value) slug.dataset.edited = 'true'; else delete slug.dataset.edited; });
    }
    slug.value = d.slug;
    name.value = d.name;
    desc.value = d.description || '';
    instr.value = d.instructions || '';
    model.append(...models.map((id) => h('option', { value: id }, id)));
    model.value = d.model || '';
    vis.value = d.visibility || 'private';
    starters.value = (d.starters || []).join('\n');
    const choices = [...tools.map((t) => ({ value: t, label: t })),
      ...this.list.filter((a) => a.slug !== d.slug && a.slug !== DEFAULT_AGENT).map((a) => ({ value: `agent__${a.slug}`, label: `Delegate to ${a.name}` }))];
    const toolTpl = dlg.querySelector('.agent-tool');
    const checks = choices.map((c) => {
      const l = toolTpl.cloneNode(true);
      const cb = l.querySelector('input');
      cb.value = c.value;
      cb.checked = (d.tools || []).includes(c.value);
      l.querySelector('span').textContent = c.label;
      return l;
    });
    toolTpl.replaceWith(...checks);
    dlg.querySelector('.agent-tools .hint').hidden = checks.length > 0;
    const errEl = dlg.querySelector('[data-testid="agent-error"]');
    const cancel = dlg.querySelector('button[value="cancel"]');
    const del = dlg.querySelector('[data-testid="agent-delete"]');
    del.hidden = !def || def.read_only || def.slug === DEFAULT_AGENT;
    // Delete asks once more on the button itself, then deletes.
    del.addEventListener('click', async () => {
      if (!del.dataset.confirm) {
        del.dataset.confirm = 'true';
        del.textContent = `Delete ${d.name}? Click again`;
        return;
      }
      try {
        await this.conn.request('delete_agent', { slug: d.slug }, { retry: false });
        dlg.close();
        this.selected = DEFAULT_AGENT;
        await this.load();
        this.toast(`Deleted ${d.name}.`);
      } catch (err) {
        errEl.textContent = err.message;
        errEl.hidden = false;
      }
    });
    document.body.append(dlg);
    cancel.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => dlg.remove());
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = {
        name: name.value.trim() || slug.value.trim(), description: desc.value.trim(),
        instructions: instr.value, model: model.value, visibility: vis.value,
        tools: checks.map((l) => l.querySelector('input')).filter((cb) => cb.checked).map((cb) => cb.value),
        starters: starters.value.split('\n').map((s) => s.trim()).filter(Boolean),
      };
      if (slug.value.trim()) body.slug = slug.value.trim(); // else the server makes it from the name
      try {
        const saved = await this.conn.request(def ? 'update_agent' : 'create_agent', body, { retry: false });
        dlg.close();
        this.selected = saved.slug;
        await this.load();
        this.toast(def ? `Saved ${saved.name} (version ${saved.version}).` : `Created ${saved.name}.`);
      } catch (err) {
        errEl.textContent = err.message;
        errEl.hidden = false;
      }
    });
    dlg.showModal();
    name.focus();
  }
}

// Delegation shows, inside a tool card of agent__<slug>, the other agent's
// work live: it subscribes to the child conversation the delegation event
// names and renders its answer text as it streams, with a link to open the
// child on its own, and the approvals the child waits for.
export class Delegation {
  constructor({ conn, card, childId, agent }) {
    this.conn = conn;
    this.childId = childId;
    this.text = '';
    const tpl = clone('tpl-delegate'); // web.Delegation
    this.approvalTpl = tpl.querySelector('.delegate-approval');
    this.approvalTpl.remove();
    this.box = card.querySelector('.delegate') || tpl.cloneNode(false);
    this.body = tpl.querySelector('.delegate-text');
    this.approvals = tpl.querySelector('.delegate-approvals');
    this.box.replaceChildren(delegateLink(tpl, childId, agent), this.body, this.approvals);
    if (!this.box.isConnected) card.append(this.box);
    this.conn.subscribe({ stream: 'conversation', conversation_id: childId, after: 0 }, (f) => this.onFrame(f))
      .then((res) => { this.sub = res.sub; }, () => {});
  }

  onFrame(f) {
    if (f.type !== 'event' || !f.event || f.event.type !== 'conversation') return;
    const ev = f.event.event || {};
    switch (ev.type) {
      case 'start_response': this.text = ''; break;
      case 'append_text': this.text += ev.text || ''; this.body.textContent = this.text; break;
      case 'approval_request': this.approval(ev); break;
      case 'approval': this.approvals.querySelector(`[data-call-id="${CSS.escape(ev.call_id)}"]`)?.remove(); break;
      case 'end': this.dispose(); break;
      default: break;
    }
  }

  approval(ev) {
    const decide = (decision) => this.conn.request('approve', { conversation_id: this.childId, call_id: ev.call_id, decision }, { retry: false }).catch(() => {});
    const row = this.approvalTpl.cloneNode(true);
    row.dataset.callId = ev.call_id;
    row.querySelector('span').textContent = `${ev.name} waits for your approval`;
    row.querySelector('[data-testid="delegate-approve"]').addEventListener('click', () => decide('approve'));
    row.querySelector('[data-testid="delegate-deny"]').addEventListener('click', () => decide('deny'));
    this.approvals.append(row);
  }

  dispose() {
    if (this.sub) this.conn.unsubscribe(this.sub);
    this.sub = null;
  }
}

// childLink adds the link to a finished delegation's child conversation.
export function childLink(card, childId, agent) {
  if (!card || !childId || card.querySelector('.delegate-link')) return;
  const tpl = clone('tpl-delegate');
  const box = card.querySelector('.delegate') || tpl.cloneNode(false);
  box.prepend(delegateLink(tpl, childId, agent));
  if (!box.isConnected) card.append(box);
}

// delegateLink is the template's link to the child conversation, named.
function delegateLink(tpl, childId, slug) {
  const a = tpl.querySelector('.delegate-link');
  a.href = `/c/${encodeURIComponent(childId)}`;
  const who = a.querySelector('.delegate-agent');
  who.dataset.agent = slug;
  who.textContent = nameOfAgent(slug);
  return a;
}
