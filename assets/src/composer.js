// Composer is the message box: Enter sends, Shift+Enter adds a line, images
// can be pasted, dropped or picked and go out as image content; "/" opens
// the tool servers' prompts and the attach button their resources (mcp.js).
// A document dropped or picked (anything but an image) is uploaded at once,
// its chip following its ingestion; on send it goes in the message as a
// file part (the server gives the model its text, or file_search over
// it), and the chat gets the bases the tray holds (a new chat's
// /?knowledge=) so the agent can search and cite them (app.js send).
import { h, icon } from './dom.js';
import { McpMenu } from './mcp.js';
import { clone } from './message.js';
import { statusText, uploadFile } from './knowledge.js';
import { imageTypeNames, isImageType, localInstants } from './rules.js';

const MAX_IMAGE_BYTES = 8 << 20; // the client-side cap; the server has its own

export class Composer {
  constructor(form, { conn, onSend, onStop, onToast }) {
    this.form = form;
    this.input = form.querySelector('#prompt');
    this.file = form.querySelector('#file');
    this.tray = form.querySelector('#attachments');
    this.sendBtn = form.querySelector('[data-testid="send"]');
    this.stopBtn = form.querySelector('[data-testid="stop"]');
    this.onSend = onSend;
    this.onStop = onStop;
    this.toast = onToast || (() => {});
    this.images = [];
    this.resources = []; // {server, uri, name}
    // Knowledge bases ({id, name}: the server rendered them in the tray)
    // and documents ({name, id, status, error, chunks}: id once uploaded).
    this.bases = [...this.tray.querySelectorAll('[data-knowledge-id]')].map((el) => ({ id: el.dataset.knowledgeId, name: el.querySelector('.attachment-name').textContent }));
    this.docs = [];
    this.onFileStatus = (e) => {
      if (!form.isConnected) { document.removeEventListener('file-status', this.onFileStatus); return; }
      const d = this.docs.find((x) => x.id && x.id === e.detail?.id);
      if (d) { Object.assign(d, { status: e.detail.status, error: e.detail.error, chunks: e.detail.chunks }); this.renderTray(); }
    };
    document.addEventListener('file-status', this.onFileStatus);
    this.busy = false;
    this.mcp = conn ? new McpMenu(this, conn, this.toast) : null;

    form.addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
    this.input.addEventListener('keydown', (e) => {
      if (this.mcp?.key(e)) return;
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        this.submit();
      }
    });
    this.input.addEventListener('input', () => { this.autosize(); this.mcp?.input(this.input.value); });
    this.input.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files || [])].filter((f) => f.type.startsWith('image/'));
      if (files.length) { e.preventDefault(); files.forEach((f) => this.addFile(f)); }
    });
    this.file.addEventListener('change', () => {
      [...this.file.files].forEach((f) => this.addFile(f));
      this.file.value = '';
    });
    this.stopBtn.addEventListener('click', () => this.onStop());
    this.tray.addEventListener('click', (e) => {
      const b = e.target.closest('[data-remove]');
      if (b) this.images.splice(Number(b.dataset.remove), 1);
      const r = e.target.closest('[data-remove-resource]');
      if (r) this.resources.splice(Number(r.dataset.removeResource), 1);
      const k = e.target.closest('[data-remove-knowledge]');
      if (k) this.bases.splice(Number(k.dataset.removeKnowledge), 1);
      const d = e.target.closest('[data-remove-document]');
      if (d) this.docs.splice(Number(d.dataset.removeDocument), 1);
      if (b || r || k || d) this.renderTray();
    });
    this.autosize();
  }

  focus() { this.input.focus(); }

  autosize() {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }

  setRunning(running) {
    this.stopBtn.hidden = !running;
    this.sendBtn.hidden = running;
  }

  addFile(f) {
    if (!isImageType(f.type)) { this.addDocument(f); return; }
    if (f.size > MAX_IMAGE_BYTES) { this.toast(`${f.name || 'The image'} is larger than 8 MB.`, 'error'); return; }
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      this.images.push({ mime: f.type, data: url.slice(url.indexOf(',') + 1), url, name: f.name || 'image' });
      this.renderTray();
    };
    r.readAsDataURL(f);
  }

  // addDocument uploads a document for the message's knowledge.
  async addDocument(f) {
    const d = { name: f.name || 'document', id: null, status: '' };
    this.docs.push(d);
    this.renderTray();
    try {
      Object.assign(d, await uploadFile(f));
      d.name = f.name || d.name;
    } catch (err) {
      this.docs.splice(this.docs.indexOf(d), 1);
      this.toast(`Could not upload ${d.name}: ${err.message}`, 'error');
    }
    this.renderTray();
  }

  // attachResource adds a tool server's resource to the message.
  attachResource(ref) {
    if (!this.resources.some((r) => r.server === ref.server && r.uri === ref.uri)) this.resources.push(ref);
    this.renderTray();
  }

  // insertPrompt puts an expanded prompt (get_prompt's result) in the
  // composer: its text in the box, its resources and images in the tray.
  insertPrompt(res) {
    const texts = [];
    for (const m of res.messages || []) {
      for (const c of m.content || []) {
        if (c.type === 'text') texts.push(c.body);
        else if (c.type === 'resource') this.attachResource({ server: c.server, uri: c.uri, name: c.name || c.uri });
        else if (c.type === 'image' && isImageType(c.mime)) this.images.push({ mime: c.mime, data: c.data, url: `data:${c.mime};base64,${c.data}`, name: 'image' });
      }
    }
    this.input.value = texts.join('\n\n');
    this.renderTray();
    this.autosize();
  }

  renderTray() {
    this.tray.replaceChildren(...this.images.map((img, i) => h('div', { class: 'attachment', 'data-testid': 'attachment' },
      h('img', { src: img.url, alt: img.name }),
      h('button', { type: 'button', class: 'attachment-remove', 'data-remove': i, 'aria-label': `Remove ${img.name}` }, icon('x')))),
    ...this.resources.map((r, i) => h('div', { class: 'attachment attachment-resource', 'data-testid': 'resource-attachment', 'data-uri': r.uri, title: `${r.server}: ${r.uri}` },
      icon('file'), h('span', { class: 'attachment-name' }, r.name || r.uri),
      h('button', { type: 'button', class: 'attachment-remove', 'data-remove-resource': i, 'aria-label': `Remove ${r.name || r.uri}` }, icon('x')))),
    ...this.bases.map((k, i) => {
      const el = clone('tpl-knowledge-chip');
      el.dataset.knowledgeId = k.id;
      el.querySelector('.attachment-name').textContent = k.name;
      const x = el.querySelector('[data-remove-knowledge]');
      x.dataset.removeKnowledge = String(i);
      x.setAttribute('aria-label', `Remove ${k.name}`);
      return el;
    }),
    ...this.docs.map((d, i) => {
      const el = clone('tpl-document-chip');
      el.dataset.status = d.status || '';
      if (d.id) el.dataset.fileId = d.id;
      el.querySelector('.attachment-name').textContent = d.name;
      el.querySelector('.attachment-status').textContent = statusText(d);
      const x = el.querySelector('[data-remove-document]');
      x.dataset.removeDocument = String(i);
      x.setAttribute('aria-label', `Remove ${d.name}`);
      return el;
    }));
    this.tray.hidden = this.images.length === 0 && this.resources.length === 0 && this.bases.length === 0 && this.docs.length === 0;
  }

  async submit() {
    if (this.busy) return;
    // While a turn runs the message is queued (the chat sends on_busy
    // queue); Esc still stops the turn.
    const text = this.input.value.trim();
    if (!text && !this.images.length && !this.resources.length && !this.docs.length) return;
    if (this.docs.some((d) => !d.id)) { this.toast('Wait until the documents are uploaded.', 'info'); return; }
    const docs = this.docs.filter((d) => d.status !== 'failed');
    const knowledge = { bases: this.bases.map((k) => k.id) };
    const content = [];
    for (const img of this.images) content.push({ type: 'image', mime: img.mime, data: img.data });
    if (text) content.push({ type: 'text', body: text });
    for (const r of this.resources) content.push({ type: 'resource', server: r.server, uri: r.uri, name: r.name });
    // Documents travel in the message as file parts: the server gives the
    // model their text (or file_search over them) and the history keeps them.
    for (const d of docs) content.push({ type: 'file', file_id: d.id, name: d.name });
    const saved = { value: this.input.value, images: this.images, resources: this.resources, bases: this.bases, docs: this.docs };
    this.mcp?.close();
    this.input.value = '';
    this.images = [];
    this.resources = [];
    this.bases = [];
    this.docs = [];
    this.renderTray();
    this.autosize();
    this.busy = true;
    try {
      await this.onSend(content, knowledge);
    } catch (err) {
      this.input.value = saved.value;
      this.images = saved.images;
      this.resources = saved.resources;
      this.bases = saved.bases;
      this.docs = saved.docs;
      this.renderTray();
      this.autosize();
      this.toast(localInstants(err.message || '') || 'Could not send the message.', 'error');
    } finally {
      this.busy = false;
    }
  }
}
