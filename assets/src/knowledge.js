// Knowledge (DESIGN.md §12.1): the knowledge page (/knowledge,
// web/knowledge.templ) and the upload both it and the composer use. The
// page creates and deletes bases and uploads files into one
// (upload_file, add_knowledge_file); each file's row shows its ingestion
// as file_status events arrive (the sidebar's agent stream hands them on
// as a "file-status" DOM event), and the page is rendered again by the
// server after each change (one renderer: templ).
import { clone } from './message.js';
import { citationPlace } from './rules.js';

// uploadFile stores a file (POST /agentik/files, multipart) and resolves
// with the File; a refusal rejects with the server's message.
export async function uploadFile(f) {
  const body = new FormData();
  body.append('file', f, f.name || 'file');
  const res = await fetch('/agentik/files', { method: 'POST', body, credentials: 'same-origin' });
  const j = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(j.message || `upload failed (${res.status})`), { code: j.code });
  return j;
}

// statusText is what a file's row or chip says of its ingestion.
export function statusText(f) {
  if (f.status === 'processed') return f.chunks === 1 ? 'ready · 1 passage' : `ready · ${f.chunks || 0} passages`;
  if (f.status === 'failed') return `failed: ${f.error || ''}`;
  if (!f.status) return 'uploading…';
  return `${f.status}…`;
}

export class Knowledge {
  constructor({ conn, toast, reload }) {
    this.conn = conn;
    this.toast = toast || (() => {});
    this.reload = reload || (() => {});
    this.main = null;
    this.uploads = 0; // uploads in flight: the page is rendered again once they are done
    document.addEventListener('file-status', (e) => this.fileStatus(e.detail));
  }

  mount(main) {
    this.main = main.dataset.page === 'knowledge' ? main : null;
    if (!this.main) return;
    main.querySelector('[data-testid="knowledge-create-form"]')?.addEventListener('submit', (e) => {
      e.preventDefault();
      this.create(e.target);
    });
    for (const form of main.querySelectorAll('[data-testid="knowledge-search-form"]')) {
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        this.search(form.closest('[data-testid="knowledge-base"]'), form.elements.query.value.trim());
      });
    }
    for (const input of main.querySelectorAll('[data-action="knowledge-upload"]')) {
      input.addEventListener('change', () => {
        const files = [...input.files];
        input.value = '';
        this.upload(input.closest('[data-testid="knowledge-base"]'), files);
      });
    }
  }

  error(err) {
    const el = this.main?.querySelector('[data-testid="knowledge-error"]');
    if (!el) return;
    el.hidden = !err;
    el.textContent = err ? err.message : '';
  }

  async create(form) {
    const name = form.elements.name.value.trim();
    if (!name) return;
    try {
      await this.conn.request('create_knowledge', { name }, { retry: false });
      this.reload();
    } catch (err) {
      this.error(err);
    }
  }

  // search lists the passages of a base that match query.
  async search(base, query) {
    const list = base?.querySelector('[data-testid="knowledge-results"]');
    if (!list || !query) return;
    try {
      const { results } = await this.conn.request('search_knowledge', { knowledge_id: base.dataset.id, query }, { retry: false });
      list.replaceChildren(...(results || []).map((p) => {
        const li = clone('tpl-knowledge-result');
        li.querySelector('.cite-file').textContent = p.file_name || '';
        li.querySelector('.cite-place').textContent = citationPlace(p);
        li.querySelector('.kb-score').textContent = `score ${Number(p.score || 0).toFixed(4)}`;
        li.querySelector('.cite-text').textContent = p.text || '';
        return li;
      }));
      if (!results?.length) list.replaceChildren(Object.assign(document.createElement('li'), { className: 'kb-none', textContent: 'No passage matches.' }));
      this.error(null);
    } catch (err) {
      this.error(err);
    }
  }

  // upload stores files and puts them in base (its section), each with a
  // row saying how far it is.
  async upload(base, files) {
    if (!base || !files.length) return;
    const list = base.querySelector('[data-testid="knowledge-files"]');
    this.uploads++;
    try {
      await Promise.all(files.map(async (f) => {
        const row = clone('tpl-knowledge-file');
        row.dataset.status = '';
        row.querySelector('.kb-file-name').textContent = f.name;
        row.querySelector('.kb-file-status').textContent = statusText({});
        list.append(row);
        try {
          const file = await uploadFile(f);
          row.dataset.fileId = file.id;
          this.setRow(row, file);
          await this.conn.request('add_knowledge_file', { knowledge_id: base.dataset.id, file_id: file.id }, { retry: false });
        } catch (err) {
          this.setRow(row, { status: 'failed', error: err.message });
        }
      }));
    } finally {
      this.uploads--;
    }
    if (this.uploads === 0 && !list.querySelector('[data-status="failed"]:not([data-file-id])')) this.reload();
  }

  setRow(row, f) {
    row.dataset.status = f.status || '';
    row.querySelector('.kb-file-status').textContent = statusText(f);
  }

  // fileStatus follows a file's ingestion on the page; once it ends the
  // page is rendered again (its base's counts and status change too).
  fileStatus(f) {
    if (!this.main || !f?.id) return;
    const row = this.main.querySelector(`[data-file-id="${CSS.escape(f.id)}"]`);
    if (!row) return;
    this.setRow(row, f);
    if (f.status !== 'processing' && this.uploads === 0) this.reload();
  }

  // act runs a base's button: delete (a second click confirms) or remove
  // a file from it.
  async act(a, el) {
    const base = el.closest('[data-testid="knowledge-base"]');
    if (!base) return;
    try {
      if (a === 'knowledge-delete') {
        if (el.dataset.armed !== 'true') {
          el.dataset.armed = 'true';
          el.textContent = `Delete “${base.dataset.name}” for good`;
          el.classList.add('btn-danger');
          return;
        }
        await this.conn.request('delete_knowledge', { knowledge_id: base.dataset.id }, { retry: false });
      } else if (a === 'knowledge-remove-file') {
        const row = el.closest('[data-file-id]');
        await this.conn.request('remove_knowledge_file', { knowledge_id: base.dataset.id, file_id: row.dataset.fileId }, { retry: false });
      }
      this.reload();
    } catch (err) {
      this.error(err);
    }
  }
}
