// The tool servers' prompts and resources in the composer: typing "/" opens
// a menu of the prompts (WS op list_prompts); picking one asks for its
// arguments in a small form, expands it (get_prompt) and puts its text in
// the message box and its resources and images in the tray. The attach
// button lists the resources and templates (list_resources); picking one
// attaches it as a {type:'resource', server, uri, name} part, which the
// server reads for the model when the message is sent.
import { h, icon } from './dom.js';
import { dateLocale } from './locale.js';

// templateVars are the variables of an RFC 6570 URI template's simple
// expressions ({id}); other operators are not offered.
function templateVars(tmpl) {
  return [...tmpl.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);
}

export class McpMenu {
  constructor(composer, conn, toast) {
    this.composer = composer;
    this.conn = conn;
    this.toast = toast;
    this.items = []; // {el, pick}
    this.active = -1;
    this.prompts = null; // a promise of the list, loaded on the first "/"
    this.mode = ''; // '', 'prompts', 'resources', 'form'
    this.menu = h('div', { class: 'mcp-menu', 'data-testid': 'mcp-menu', role: 'listbox', hidden: true });
    composer.form.querySelector('.composer-box').prepend(this.menu);
    this.button = h('button', { type: 'button', class: 'icon-btn', 'data-testid': 'attach-resource', 'aria-label': 'Attach a resource', title: 'Attach a resource of a tool server', hidden: true }, icon('file'));
    const row = composer.form.querySelector('.composer-row');
    row.insertBefore(this.button, row.querySelector('.attach').nextSibling);
    this.button.addEventListener('click', () => (this.mode === 'resources' ? this.close() : this.openResources()));
    this.onOutside = (e) => { if (!this.menu.contains(e.target) && !this.button.contains(e.target) && e.target !== composer.input) this.close(); };
    // The attach button shows once a tool server is configured.
    conn.request('list_tools', {}).then((res) => { this.button.hidden = !(res.servers || []).length; }, () => {});
  }

  // input follows the message box: "/name" (one word, nothing else) filters
  // the prompts; anything else closes their menu.
  input(value) {
    const m = /^\/(\S*)$/.exec(value);
    if (m) this.openPrompts(m[1].toLowerCase());
    else if (this.mode === 'prompts') this.close();
  }

  // key handles a key of the message box while the menu is open; true when
  // it was the menu's.
  key(e) {
    if (this.menu.hidden || this.mode === 'form') return false;
    const n = this.items.length;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      if (n) this.setActive((this.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n);
    } else if ((e.key === 'Enter' || e.key === 'Tab') && !e.shiftKey && this.active >= 0 && n) {
      this.items[this.active].pick();
    } else if (e.key === 'Escape') {
      this.close();
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  }

  // openPrompts lists the reader's saved prompts (their library and their
  // projects', inserted as they are) and then the tool servers' prompts.
  async openPrompts(filter) {
    this.prompts ||= this.conn.request('list_prompts', {}).then((r) => r.prompts || [], (err) => { this.prompts = null; throw err; });
    this.saved ||= this.conn.request('list_saved_prompts', {}).then((r) => r.prompts || [], () => { this.saved = null; return []; });
    let list;
    let saved;
    try { [list, saved] = await Promise.all([this.prompts, this.saved]); } catch (err) { this.toast(err.message || 'Could not list the prompts.', 'error'); return; }
    if (!/^\/\S*$/.test(this.composer.input.value)) return; // typed on meanwhile
    const shown = list.filter((p) => !filter || p.name.toLowerCase().includes(filter) || (p.title || '').toLowerCase().includes(filter));
    const mine = saved.filter((p) => !filter || p.name.toLowerCase().includes(filter));
    this.show('prompts', 'Prompts', [...mine.map((p) => ({
      el: h('div', { class: 'mcp-item', role: 'option', 'data-testid': 'saved-prompt-item', 'data-name': p.name },
        h('span', { class: 'mcp-item-name' }, `/${p.name}`),
        h('span', { class: 'mcp-item-desc' }, p.text.slice(0, 120)),
        h('span', { class: 'mcp-item-server' }, p.mine ? 'saved' : 'shared')),
      pick: () => this.insertSaved(p),
    })), ...shown.map((p) => ({
      el: h('div', { class: 'mcp-item', role: 'option', 'data-testid': 'prompt-item', 'data-name': p.name, 'data-server': p.server },
        h('span', { class: 'mcp-item-name' }, `/${p.name}`),
        h('span', { class: 'mcp-item-desc' }, p.description || p.title || ''),
        h('span', { class: 'mcp-item-server' }, p.server)),
      pick: () => this.choosePrompt(p),
    }))], list.length || saved.length ? 'No prompt matches.' : 'No prompt saved (Settings) and none offered by the tool servers.');
  }

  // insertSaved puts a saved prompt's text in the message box.
  insertSaved(p) {
    this.composer.insertPrompt({ messages: [{ content: [{ type: 'text', body: p.text }] }] });
    this.close();
    this.composer.focus();
  }

  async openResources() {
    let res;
    try { res = await this.conn.request('list_resources', {}); } catch (err) { this.toast(err.message || 'Could not list the resources.', 'error'); return; }
    const items = (res.resources || []).map((r) => ({
      el: h('div', { class: 'mcp-item', role: 'option', 'data-testid': 'resource-item', 'data-uri': r.uri, 'data-server': r.server },
        icon('file'),
        h('span', { class: 'mcp-item-name' }, r.title || r.name || r.uri),
        h('span', { class: 'mcp-item-desc' }, r.uri),
        h('span', { class: 'mcp-item-server' }, r.server)),
      pick: () => this.attach({ server: r.server, uri: r.uri, name: r.title || r.name || r.uri }),
    }));
    for (const t of res.templates || []) {
      const vars = templateVars(t.uri_template);
      if (!vars.length) continue;
      items.push({
        el: h('div', { class: 'mcp-item', role: 'option', 'data-testid': 'template-item', 'data-template': t.uri_template, 'data-server': t.server },
          icon('file'),
          h('span', { class: 'mcp-item-name' }, t.title || t.name),
          h('span', { class: 'mcp-item-desc' }, t.uri_template),
          h('span', { class: 'mcp-item-server' }, t.server)),
        pick: () => this.form(t.title || t.name, t.description, vars.map((v) => ({ name: v, required: true })), 'Attach', async (values) => {
          const uri = t.uri_template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, v) => encodeURIComponent(values[v] || ''));
          this.attach({ server: t.server, uri, name: uri });
        }),
      });
    }
    this.show('resources', 'Resources', items, 'The tool servers offer no resources.');
  }

  attach(ref) {
    this.composer.attachResource(ref);
    this.close();
    this.composer.focus();
  }

  choosePrompt(p) {
    const expand = async (args) => {
      const res = await this.conn.request('get_prompt', { server: p.server, name: p.name, arguments: args });
      this.composer.insertPrompt(res);
      this.close();
      this.composer.focus();
    };
    if (!(p.arguments || []).length) {
      expand({}).catch((err) => this.toast(err.message || 'Could not get the prompt.', 'error'));
      return;
    }
    this.form(p.title || p.name, p.description, p.arguments, 'Insert', expand);
  }

  // form asks for fields [{name, description, required}] and calls submit
  // with their values; a refusal is shown in the form, which stays.
  form(title, description, fields, label, submit) {
    const inputs = fields.map((f) => h('input', { type: 'text', name: f.name, class: 'mcp-input', 'data-testid': 'prompt-arg', placeholder: f.description || '', required: f.required || null, 'aria-label': f.name }));
    const error = h('div', { class: 'mcp-error', 'data-testid': 'prompt-error', hidden: true });
    const go = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'prompt-insert' }, label);
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    const f = h('form', { class: 'mcp-form', 'data-testid': 'prompt-form', novalidate: true },
      h('div', { class: 'mcp-form-title' }, title),
      description ? h('div', { class: 'mcp-item-desc' }, description) : null,
      fields.map((fd, i) => h('label', { class: 'mcp-field' }, h('span', {}, fd.name, fd.required ? h('span', { class: 'mcp-required', title: 'required' }, ' *') : null), inputs[i])),
      error,
      h('div', { class: 'mcp-form-row' }, cancel, go));
    cancel.addEventListener('click', () => { this.close(); this.composer.focus(); });
    f.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); this.close(); this.composer.focus(); } });
    f.addEventListener('submit', async (e) => {
      e.preventDefault();
      const values = {};
      fields.forEach((fd, i) => { if (inputs[i].value !== '') values[fd.name] = inputs[i].value; });
      go.disabled = true;
      try {
        await submit(values);
      } catch (err) {
        error.textContent = err.message || 'That did not work.';
        error.hidden = false;
      } finally {
        go.disabled = false;
      }
    });
    this.mode = 'form';
    this.items = [];
    this.menu.replaceChildren(f);
    this.menu.hidden = false;
    inputs[0]?.focus();
  }

  show(mode, heading, items, empty) {
    this.mode = mode;
    this.items = items;
    this.menu.replaceChildren(h('div', { class: 'mcp-heading' }, heading),
      ...(items.length ? items.map((it) => it.el) : [h('div', { class: 'mcp-empty', 'data-testid': 'mcp-empty' }, empty)]));
    items.forEach((it, i) => {
      it.el.addEventListener('mousedown', (e) => e.preventDefault()); // keep the message box's focus
      it.el.addEventListener('click', () => it.pick());
      it.el.addEventListener('mouseenter', () => this.setActive(i));
    });
    this.setActive(items.length ? 0 : -1);
    this.menu.hidden = false;
    document.addEventListener('mousedown', this.onOutside);
  }

  setActive(i) {
    this.active = i;
    this.items.forEach((it, j) => it.el.setAttribute('aria-selected', String(i === j)));
    this.items[i]?.el.scrollIntoView({ block: 'nearest' });
  }

  close() {
    this.mode = '';
    this.items = [];
    this.active = -1;
    this.menu.hidden = true;
    this.menu.replaceChildren();
    document.removeEventListener('mousedown', this.onOutside);
  }
}

// ResourceView shows the resource behind a message's resource chip (as the
// server reads it now, WS op read_resource) in a dialog. The server
// follows a resource once a message attached it: its resource_updated
// agent event (the sidebar passes it on as a "resource-updated" DOM event)
// marks the chips of that resource updated (data-resource holds the URI:
// templ sanitizes a data-uri attribute as a link) and reads an open view again.
export class ResourceView {
  constructor(conn) {
    this.conn = conn;
    this.cur = null; // {server, uri} shown
    this.body = h('pre', { class: 'resource-text', 'data-testid': 'resource-text' });
    this.title = h('h2', { class: 'dialog-title' });
    this.note = h('p', { class: 'resource-note', 'data-testid': 'resource-note' });
    this.files = h('div', { class: 'resource-files' }); // a download link per binary part
    const close = h('button', { type: 'submit', class: 'btn' }, 'Close');
    this.dialog = h('dialog', { class: 'dialog resource-dialog', 'data-testid': 'resource-dialog' },
      h('form', { method: 'dialog' }, this.title, this.note, this.body, this.files, h('div', { class: 'dialog-actions' }, close)));
    // The close event comes a task after close(): a chip clicked at once
    // has opened the dialog again, and what it shows stays current.
    this.dialog.addEventListener('close', () => { if (!this.dialog.open) this.cur = null; });
    document.body.append(this.dialog);
    document.addEventListener('click', (e) => {
      const chip = e.target.closest('[data-testid="resource-chip"]');
      if (chip) this.open(chip.dataset.server, chip.dataset.resource, chip.textContent.trim());
    });
    document.addEventListener('resource-updated', (e) => this.updated(e.detail || {}));
  }

  async open(server, uri, name) {
    this.cur = { server, uri };
    this.title.textContent = name || uri;
    this.note.textContent = `${server}: ${uri}`;
    this.body.textContent = 'Reading…';
    this.files.replaceChildren();
    if (!this.dialog.open) this.dialog.showModal();
    await this.read();
  }

  async read() {
    const { server, uri } = this.cur || {};
    if (!server) return;
    try {
      const res = await this.conn.request('read_resource', { server, uri });
      if (this.cur?.uri !== uri) return;
      const contents = res.contents || [];
      this.body.textContent = contents.map((c) => (c.blob ? `[binary ${c.mime_type || ''}, ${c.blob.length} bytes of base64]` : c.text || '')).join('\n\n');
      this.files.replaceChildren(...contents.filter((c) => c.blob).map((c) => {
        const file = (c.uri || uri).split(/[/?#]/).filter(Boolean).pop() || 'resource';
        return h('a', { class: 'btn btn-sm', 'data-testid': 'resource-download', href: `data:${c.mime_type || 'application/octet-stream'};base64,${c.blob}`, download: file }, `Download ${file}`);
      }));
    } catch (err) {
      this.body.textContent = err.message || 'The resource could not be read.';
    }
  }

  updated({ server, uri }) {
    for (const chip of document.querySelectorAll('[data-testid="resource-chip"]')) {
      if (chip.dataset.server === server && chip.dataset.resource === uri) chip.dataset.updated = 'true';
    }
    if (this.cur && this.cur.server === server && this.cur.uri === uri) {
      this.note.textContent = `${server}: ${uri} · updated ${new Date().toLocaleTimeString(dateLocale())}`;
      this.dialog.dataset.updates = String(Number(this.dialog.dataset.updates || 0) + 1);
      this.read();
    }
  }
}
