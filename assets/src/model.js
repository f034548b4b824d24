// Model picker and per-conversation settings: the composer's model select
// (the conversation's model; for a new chat, the one remembered in
// localStorage) and a dialog for the system prompt and sampling params.
// Everything goes through the public ops list_models, get_conversation,
// create_conversation and update_conversation.
import { h } from './dom.js';
import { ChatTools } from './chattools.js';

const STORE_KEY = 'agentik.model'; // the model of new chats
const SLIDERS = 'M4 6h10m4 0h2M4 12h4m4 0h8M4 18h12m4 0h0M14 4v4M8 10v4M16 16v4';

function slidersIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', SLIDERS);
  svg.append(p);
  return svg;
}

// showModel names model id in the sidebar's model label: the model that
// wrote the open chat's last answer, or the one just picked (the server
// renders it first: web.Page.ModelName).
export function showModel(id) {
  const name = document.querySelector('[data-testid="model"] .model-name');
  if (name && id) name.textContent = id;
}

function remembered() {
  try { return localStorage.getItem(STORE_KEY) || ''; } catch { return ''; }
}

function remember(id) {
  try { localStorage.setItem(STORE_KEY, id); } catch { /* private mode */ }
}

export class ModelSettings {
  constructor(form, { conn, chatId, onToast, defaultPrompt, defaultModel }) {
    this.form = form;
    this.conn = conn;
    this.chatId = chatId;
    // defaultPrompt() is the system prompt the chat gets when it sets none.
    this.defaultPrompt = defaultPrompt || (() => '');
    // defaultModel() is the reader's default model (their settings): a
    // new chat's model before this browser's last pick.
    this.defaultModel = defaultModel || (() => '');
    this.toast = onToast || (() => {});
    this.models = [];
    this.def = '';
    this.conv = null; // the open conversation's settings
    this.pending = { system_prompt: '', params: null }; // for a chat not created yet
    this.attach = form.querySelector('.attach');

    this.select = h('select', { class: 'model-select', 'data-testid': 'model-select', 'aria-label': 'Model', hidden: true });
    this.button = h('button', { type: 'button', class: 'icon-btn', 'data-testid': 'settings-btn', 'aria-label': 'Chat settings', title: 'System prompt and parameters' }, slidersIcon());
    const row = form.querySelector('.composer-row');
    // The tools this chat may use (chattools.js): a new chat's go with its create.
    this.tools = new ChatTools(form.querySelector('.composer-box'), {
      conn,
      onToast: this.toast,
      onChange: async (tools) => {
        const cid = this.chatId();
        if (cid) this.conv = await this.conn.request('update_conversation', { conversation_id: cid, tools }, { retry: false });
      },
    });
    row.insertBefore(h('span', { class: 'model-bar' }, this.select, this.button, this.tools.button), row.querySelector('.hint'));
    this.select.addEventListener('change', () => this.pick(this.select.value));
    this.button.addEventListener('click', () => this.open());
    this.dialog = this.buildDialog();
    document.body.append(this.dialog);
    this.load();
  }

  async load() {
    try {
      const res = await this.conn.request('list_models', {});
      this.models = res.models || [];
      this.def = res.default || '';
      const id = this.chatId();
      if (id) this.conv = await this.conn.request('get_conversation', { conversation_id: id });
      this.tools.set(this.conv?.tools);
    } catch (err) {
      this.toast(`Could not load the models: ${err.message}`, 'error');
      return;
    }
    this.render();
  }

  // current is the model id the composer sends with.
  current() {
    if (this.conv) return this.conv.model || this.def;
    const known = (id) => id && this.models.some((m) => m.id === id);
    const pref = this.defaultModel();
    if (known(pref)) return pref;
    const r = remembered();
    return known(r) ? r : this.def;
  }

  render() {
    const cur = this.current();
    this.select.replaceChildren(...this.models.map((m) => h('option', { value: m.id, selected: m.id === cur },
      m.available ? m.id : `${m.id} (unavailable)`)));
    this.select.hidden = this.models.length === 0;
    this.select.value = cur;
    this.select.title = this.select.selectedOptions[0]?.textContent || ''; // the whole name where the picker is narrow
    const m = this.models.find((x) => x.id === cur);
    // No vision: no attach button (the server refuses images anyway).
    if (this.attach) this.attach.hidden = !!m && !m.vision;
  }

  async pick(id) {
    remember(id);
    showModel(id);
    const cid = this.chatId();
    if (cid) {
      try {
        this.conv = await this.conn.request('update_conversation', { conversation_id: cid, model: id });
      } catch (err) {
        this.toast(`Could not switch the model: ${err.message}`, 'error');
      }
    }
    this.render();
  }

  // updated applies an updated event (from any tab) to the open
  // conversation's settings.
  updated(ev) {
    if (!this.conv) return;
    for (const k of ['model', 'system_prompt']) if (k in ev) this.conv[k] = ev[k];
    if ('params' in ev) this.conv.params = Object.keys(ev.params || {}).length ? ev.params : null;
    if ('tools' in ev) {
      this.conv.tools = ev.tools.length === 1 && ev.tools[0] === '*' ? null : ev.tools;
      this.tools.set(this.conv.tools);
    }
    this.render();
  }

  // createFields are the settings of a conversation the first send creates.
  createFields() {
    const f = {};
    const m = this.current();
    if (m && m !== this.def) f.model = m;
    if (this.pending.system_prompt) f.system_prompt = this.pending.system_prompt;
    if (this.pending.params) f.params = this.pending.params;
    if (this.tools.value()) f.tools = this.tools.value();
    return f;
  }

  // created switches the panel to the conversation the first send made.
  created(conv) { this.conv = conv; this.pending = { system_prompt: '', params: null }; }

  buildDialog() {
    const field = (label, input) => h('label', { class: 'settings-field' }, h('span', null, label), input);
    this.promptIn = h('textarea', { rows: '5', 'data-testid': 'system-prompt' });
    this.tempIn = h('input', { type: 'number', min: '0', max: '2', step: '0.1', 'data-testid': 'param-temperature', placeholder: 'default' });
    this.maxIn = h('input', { type: 'number', min: '1', step: '1', 'data-testid': 'param-max-tokens', placeholder: 'default' });
    this.topIn = h('input', { type: 'number', min: '0', max: '1', step: '0.05', 'data-testid': 'param-top-p', placeholder: 'default' });
    const form = h('form', { method: 'dialog', class: 'settings-form' },
      h('h2', { class: 'dialog-title' }, 'Chat settings'),
      field('System prompt', this.promptIn),
      h('div', { class: 'settings-params' },
        field('Temperature (0–2)', this.tempIn), field('Max tokens', this.maxIn), field('Top p (0–1)', this.topIn)),
      h('div', { class: 'dialog-actions' },
        h('button', { type: 'submit', value: 'cancel', class: 'btn' }, 'Cancel'),
        h('button', { type: 'submit', value: 'save', class: 'btn btn-primary', 'data-testid': 'settings-save' }, 'Save')));
    const d = h('dialog', { class: 'dialog settings-dialog', 'data-testid': 'settings-dialog', 'aria-label': 'Chat settings' }, form);
    // Saved on submit, before the dialog closes: the dialog's close event
    // comes a task later, and a message sent in between (Enter right after
    // Save) would create its chat without the settings.
    form.addEventListener('submit', (e) => { if (e.submitter?.value === 'save') this.save(); });
    return d;
  }

  open() {
    const s = this.conv || this.pending;
    const p = s.params || {};
    this.promptIn.value = s.system_prompt || '';
    // The placeholder says what an empty prompt stands for, in full.
    const def = this.defaultPrompt();
    this.promptIn.placeholder = def
      ? `Leave empty to use the default system prompt:\n\n${def}`
      : 'Leave empty: there is no default system prompt, so the model reads only the conversation.';
    this.tempIn.value = p.temperature ?? '';
    this.maxIn.value = p.max_tokens ?? '';
    this.topIn.value = p.top_p ?? '';
    this.dialog.returnValue = '';
    this.dialog.showModal();
  }

  async save() {
    const params = {};
    if (this.tempIn.value !== '') params.temperature = Number(this.tempIn.value);
    if (this.maxIn.value !== '') params.max_tokens = Number(this.maxIn.value);
    if (this.topIn.value !== '') params.top_p = Number(this.topIn.value);
    const fields = { system_prompt: this.promptIn.value.trim(), params };
    const cid = this.chatId();
    if (!cid) {
      this.pending = { system_prompt: fields.system_prompt, params: Object.keys(params).length ? params : null };
      return;
    }
    try {
      this.conv = await this.conn.request('update_conversation', { conversation_id: cid, ...fields });
      this.toast('Settings saved; the next answer uses them.');
    } catch (err) {
      this.toast(`Could not save the settings: ${err.message}`, 'error');
    }
  }

  dispose() { this.dialog.remove(); this.tools.dispose(); }
}
