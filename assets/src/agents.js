// Agents: the picker of a new chat (with the agent's starters), the agent
// editor (instructions, model, tools chosen from the live tool list), the
// sidebar filter by agent, agents' names on answers, and a delegation's
// live view inside its tool card. Everything goes through the public ops
// list_agents, create_agent, update_agent, list_models, list_tools and
// subscribe.
import { h } from './dom.js';

export const DEFAULT_AGENT = 'agentik';

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
    for (const el of root.querySelectorAll('.msg-agent[data-agent]')) el.textContent = this.name(el.dataset.agent);
  }

  // mount attaches the picker to a new chat's empty state (none on a
  // conversation's page).
  mount(main, hasChat) {
    this.main = hasChat ? null : main;
    if (!hasChat) this.selected = DEFAULT_AGENT;
    if (this.main) this.renderPicker();
  }

  // createFields are what a new chat is created with.
  createFields() {
    return this.main && this.selected !== DEFAULT_AGENT ? { agent: this.selected } : {};
  }

  renderPicker() {
    const empty = this.main?.querySelector('#empty-state');
    if (!empty) return;
    let box = empty.querySelector('.agent-picker');
    if (!box) {
      box = h('div', { class: 'agent-picker', 'data-testid': 'agent-picker', role: 'group', 'aria-label': 'Agent' });
      empty.querySelector('.empty-text')?.after(box);
      const sugg = empty.querySelector('.suggestions');
      if (sugg) this.defaultSuggestions = [...sugg.children].map((c) => c.cloneNode(true));
    }
    const chips = this.list.map((a) => {
      const b = h('button', { type: 'button', class: 'agent-chip', 'data-testid': 'agent-option', 'data-slug': a.slug, 'aria-pressed': String(a.slug === this.selected), title: a.description || a.name }, a.name);
      b.addEventListener('click', () => { this.selected = a.slug; this.renderPicker(); });
      return b;
    });
    const add = h('button', { type: 'button', class: 'agent-chip agent-add', 'data-testid': 'new-agent' }, '+ New agent');
    add.addEventListener('click', () => this.openEditor(null));
    const cur = this.list.find((a) => a.slug === this.selected);
    const edit = cur && !cur.read_only ? h('button', { type: 'button', class: 'agent-chip agent-edit', 'data-testid': 'edit-agent' }, 'Edit') : null;
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
    sugg.replaceChildren(...starters.map((s) => h('button', { type: 'button', class: 'suggestion', 'data-action': 'prompt', 'data-prompt': s, 'data-testid': 'starter' },
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
    const field = (label, input) => h('label', { class: 'settings-field' }, h('span', null, label), input);
    const slug = h('input', { 'data-testid': 'agent-slug', placeholder: 'researcher', maxlength: '40', pattern: '[a-z0-9-]+', required: true });
    slug.value = d.slug;
    if (def) slug.disabled = true;
    const name = h('input', { 'data-testid': 'agent-name', placeholder: 'Researcher', maxlength: '200' });
    name.value = d.name;
    const desc = h('input', { 'data-testid': 'agent-description', placeholder: 'What it is good at' });
    desc.value = d.description || '';
    const instr = h('textarea', { rows: '5', 'data-testid': 'agent-instructions', placeholder: 'You are a careful researcher…' });
    instr.value = d.instructions || '';
    const model = h('select', { 'data-testid': 'agent-model' }, h('option', { value: '' }, 'Default model'), ...models.map((id) => h('option', { value: id }, id)));
    model.value = d.model || '';
    const vis = h('select', { 'data-testid': 'agent-visibility' }, h('option', { value: 'private' }, 'Private: only me'), h('option', { value: 'shared' }, 'Shared with everyone'));
    vis.value = d.visibility || 'private';
    const starters = h('textarea', { rows: '3', 'data-testid': 'agent-starters', placeholder: 'One suggested first prompt per line' });
    starters.value = (d.starters || []).join('\n');
    const choices = [...tools.map((t) => ({ value: t, label: t })),
      ...this.list.filter((a) => a.slug !== d.slug && a.slug !== DEFAULT_AGENT).map((a) => ({ value: `agent__${a.slug}`, label: `Delegate to ${a.name}` }))];
    const checks = choices.map((c) => {
      const cb = h('input', { type: 'checkbox', value: c.value, 'data-testid': 'agent-tool' });
      cb.checked = (d.tools || []).includes(c.value);
      return h('label', { class: 'agent-tool' }, cb, h('span', null, c.label));
    });
    const errEl = h('p', { class: 'agent-error', 'data-testid': 'agent-error', role: 'alert', hidden: true });
    const save = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'agent-save' }, def ? 'Save' : 'Create');
    const cancel = h('button', { type: 'button', class: 'btn', value: 'cancel' }, 'Cancel');
    const form = h('form', { method: 'dialog', class: 'settings-form' },
      h('h2', { class: 'dialog-title' }, def ? `Edit ${d.name}` : 'New agent'),
      field('Slug', slug), field('Name', name), field('Description', desc), field('Instructions', instr), field('Model', model),
      h('fieldset', { class: 'agent-tools', 'data-testid': 'agent-tools' }, h('legend', null, 'Tools'),
        checks.length ? checks : h('p', { class: 'hint' }, 'No tools are configured (AGENTIK_MCP_CONFIG) and no other agent exists yet.')),
      field('Starters', starters), field('Visibility', vis), errEl,
      h('div', { class: 'dialog-actions' }, cancel, save));
    const dlg = h('dialog', { class: 'dialog agent-editor', 'data-testid': 'agent-editor' }, form);
    document.body.append(dlg);
    cancel.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => dlg.remove());
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = {
        slug: slug.value.trim(), name: name.value.trim() || slug.value.trim(), description: desc.value.trim(),
        instructions: instr.value, model: model.value, visibility: vis.value,
        tools: checks.map((l) => l.querySelector('input')).filter((cb) => cb.checked).map((cb) => cb.value),
        starters: starters.value.split('\n').map((s) => s.trim()).filter(Boolean),
      };
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
    (def ? name : slug).focus();
  }
}

// Delegation shows, inside a tool card of agent__<slug>, the other agent's
// work live: it subscribes to the child conversation the delegation event
// names and renders its answer text as it streams, with a link to open the
// child on its own, and the approvals the child waits for.
export class Delegation {
  constructor({ conn, card, childId, agentName }) {
    this.conn = conn;
    this.childId = childId;
    this.text = '';
    this.box = card.querySelector('.delegate') || h('div', { class: 'delegate', 'data-testid': 'delegate' });
    this.body = h('div', { class: 'delegate-text', 'data-testid': 'delegate-text' });
    this.approvals = h('div', { class: 'delegate-approvals' });
    this.box.replaceChildren(
      h('a', { class: 'delegate-link', href: `/c/${encodeURIComponent(childId)}`, 'data-testid': 'delegate-link' }, `Open ${agentName}'s conversation`),
      this.body, this.approvals);
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
    const ok = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'delegate-approve' }, 'Approve');
    const no = h('button', { type: 'button', class: 'btn', 'data-testid': 'delegate-deny' }, 'Deny');
    ok.addEventListener('click', () => decide('approve'));
    no.addEventListener('click', () => decide('deny'));
    this.approvals.append(h('div', { class: 'delegate-approval', 'data-call-id': ev.call_id }, h('span', null, `${ev.name} waits for your approval`), ok, no));
  }

  dispose() {
    if (this.sub) this.conn.unsubscribe(this.sub);
    this.sub = null;
  }
}

// childLink adds the link to a finished delegation's child conversation.
export function childLink(card, childId, agentName) {
  if (!card || !childId || card.querySelector('.delegate-link')) return;
  const box = card.querySelector('.delegate') || h('div', { class: 'delegate', 'data-testid': 'delegate' });
  box.prepend(h('a', { class: 'delegate-link', href: `/c/${encodeURIComponent(childId)}`, 'data-testid': 'delegate-link' }, `Open ${agentName}'s conversation`));
  if (!box.isConnected) card.append(box);
}
