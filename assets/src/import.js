// Import dialog (web/layout.templ's ImportDialog): picks an agentik export,
// a ChatGPT data export ZIP or its conversations.json and uploads it to
// POST /agentik/import (the server tells them apart by their first bytes).
// The conversations it creates reach the sidebar as `created` events, like
// those made in another tab.

// summary says what an import did, from its ImportResult.
function summary(res) {
  const n = (res.conversations || []).length;
  const skipped = (res.existing || []).length;
  const parts = [`${n} conversation${n === 1 ? '' : 's'} imported`];
  if (skipped) parts.push(`${skipped} skipped as already imported`);
  return `${parts.join(', ')}.`;
}

export class Importer {
  constructor(dialog, { toast }) {
    this.dialog = dialog;
    this.toast = toast || (() => {});
    this.file = dialog.querySelector('#import-file');
    this.submit = dialog.querySelector('[data-testid="import-submit"]');
    this.progress = dialog.querySelector('.import-progress');
    this.result = dialog.querySelector('.import-result');
    this.busy = false;
    this.file.addEventListener('change', () => {
      this.show('', '');
      this.submit.disabled = this.busy || !this.file.files.length;
    });
    this.submit.addEventListener('click', () => this.upload());
    // Closed while an upload runs: the upload goes on, and its outcome
    // comes as a toast.
  }

  open() {
    this.file.value = '';
    this.submit.disabled = true;
    if (!this.busy) this.show('', '');
    this.dialog.showModal();
    this.file.focus();
  }

  show(text, kind) {
    this.result.textContent = text;
    this.result.dataset.kind = kind;
  }

  async upload() {
    const f = this.file.files[0];
    if (!f || this.busy) return;
    this.busy = true;
    this.submit.disabled = true;
    this.progress.hidden = false;
    this.show(`Importing ${f.name}…`, 'progress');
    let text;
    let kind = 'error';
    try {
      const res = await fetch('/agentik/import', {
        method: 'POST',
        body: f,
        credentials: 'same-origin',
        headers: { 'Content-Type': /\.zip$/i.test(f.name) ? 'application/zip' : 'application/json' },
      });
      const body = await res.json().catch(() => null);
      if (res.ok && body) {
        text = summary(body);
        kind = 'ok';
      } else {
        // A typed error: {"code","message"}.
        text = `Import failed: ${(body && body.message) || res.statusText || `status ${res.status}`}`;
      }
    } catch (err) {
      text = `Import failed: ${err.message}`;
    }
    this.busy = false;
    this.progress.hidden = true;
    this.submit.disabled = !this.file.files.length;
    this.show(text, kind);
    if (!this.dialog.open) this.toast(text, kind === 'error' ? 'error' : 'info');
  }
}
