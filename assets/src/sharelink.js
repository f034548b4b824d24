// The share dialog (web/share.templ's ShareDialog): makes a read-only link
// to the open conversation as it is now (create_share), lists its links
// (list_shares) and revokes them (revoke_share). The chat header's
// [data-action="share"] button opens it. The link's token is shown once,
// when it is made: the server keeps only its hash.
import { h, copyText } from './dom.js';
import { dateLocale } from './locale.js';

const DAY = 24 * 3600 * 1000;

export class ShareDialog {
  constructor({ conn, toast }) {
    this.conn = conn;
    this.toast = toast || (() => {});
    this.dialog = document.getElementById('share-dialog');
    if (!this.dialog) return;
    this.q = (id) => this.dialog.querySelector(`[data-testid="${id}"]`);
    this.q('share-create').addEventListener('click', () => this.create());
    this.q('share-url-copy').addEventListener('click', () => copyText(this.q('share-url').value));
    document.addEventListener('click', (e) => {
      if (e.target.closest('[data-action="share"]')) this.open();
    });
  }

  id() { return document.getElementById('main')?.dataset.conversationId || ''; }

  open() {
    if (!this.id()) return;
    this.q('share-made').hidden = true;
    this.error('');
    this.dialog.showModal();
    this.list();
  }

  error(text) {
    const el = this.q('share-error');
    el.textContent = text;
    el.hidden = !text;
  }

  async create() {
    const days = Number(this.q('share-expiry').value);
    const fields = { conversation_id: this.id() };
    if (days) fields.expires_at = new Date(Date.now() + days * DAY).toISOString();
    try {
      const s = await this.conn.request('create_share', fields);
      this.q('share-url').value = new URL(s.url, location.origin).href;
      this.q('share-made').hidden = false;
      this.q('share-url').select();
      this.error('');
      this.list();
    } catch (err) {
      this.error(err.message || String(err));
    }
  }

  async list() {
    const id = this.id();
    const ul = this.q('share-links');
    try {
      const { shares } = await this.conn.request('list_shares', {});
      const mine = shares.filter((s) => s.conversation_id === id);
      ul.replaceChildren(...(mine.length ? mine.map((s) => this.row(s)) : [h('li', { class: 'share-none' }, 'No links yet.')]));
    } catch (err) {
      this.error(err.message || String(err));
    }
  }

  row(s) {
    const made = new Date(s.created_at).toLocaleString(dateLocale());
    const until = s.expires_at ? `, expires ${new Date(s.expires_at).toLocaleString(dateLocale())}` : '';
    const revoke = h('button', { type: 'button', class: 'btn btn-sm', 'data-testid': 'share-revoke' }, 'Revoke');
    revoke.addEventListener('click', async () => {
      try {
        await this.conn.request('revoke_share', { share_id: s.id });
        this.toast('The link is revoked: it opens nothing now.');
        this.list();
      } catch (err) {
        this.error(err.message || String(err));
      }
    });
    return h('li', { class: 'share-link', 'data-testid': 'share-link', 'data-share-id': s.id }, h('span', {}, `Made ${made}${until}`), revoke);
  }
}
