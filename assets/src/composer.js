// Composer is the message box: Enter sends, Shift+Enter adds a line, images
// can be pasted, dropped or picked and go out as image content.
import { h, icon } from './dom.js';
import { imageTypeNames, isImageType } from './rules.js';

const MAX_IMAGE_BYTES = 8 << 20; // the client-side cap; the server has its own

export class Composer {
  constructor(form, { onSend, onStop, onToast }) {
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
    this.busy = false;

    form.addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        this.submit();
      }
    });
    this.input.addEventListener('input', () => this.autosize());
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
      if (!b) return;
      this.images.splice(Number(b.dataset.remove), 1);
      this.renderTray();
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
    if (!isImageType(f.type)) { this.toast(`${f.name || 'That file'} is not a ${imageTypeNames()} image.`, 'error'); return; }
    if (f.size > MAX_IMAGE_BYTES) { this.toast(`${f.name || 'The image'} is larger than 8 MB.`, 'error'); return; }
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      this.images.push({ mime: f.type, data: url.slice(url.indexOf(',') + 1), url, name: f.name || 'image' });
      this.renderTray();
    };
    r.readAsDataURL(f);
  }

  renderTray() {
    this.tray.replaceChildren(...this.images.map((img, i) => h('div', { class: 'attachment', 'data-testid': 'attachment' },
      h('img', { src: img.url, alt: img.name }),
      h('button', { type: 'button', class: 'attachment-remove', 'data-remove': i, 'aria-label': `Remove ${img.name}` }, icon('x')))));
    this.tray.hidden = this.images.length === 0;
  }

  async submit() {
    if (this.busy) return;
    // While a turn runs the message is queued (the chat sends on_busy
    // queue); Esc still stops the turn.
    const text = this.input.value.trim();
    if (!text && !this.images.length) return;
    const content = [];
    for (const img of this.images) content.push({ type: 'image', mime: img.mime, data: img.data });
    if (text) content.push({ type: 'text', body: text });
    const saved = { value: this.input.value, images: this.images };
    this.input.value = '';
    this.images = [];
    this.renderTray();
    this.autosize();
    this.busy = true;
    try {
      await this.onSend(content);
    } catch (err) {
      this.input.value = saved.value;
      this.images = saved.images;
      this.renderTray();
      this.autosize();
      this.toast(err.message || 'Could not send the message.', 'error');
    } finally {
      this.busy = false;
    }
  }
}
