// The settings page's own part (web/preference.templ): the reader's
// preferences, saved as each changes (update_preferences) and applied at
// once (the theme); their prompt library (create_saved_prompt,
// delete_saved_prompt), whose list the server renders again.
import { refresh, showError } from './manage.js';

export class Settings {
  constructor(doc, conn) {
    this.conn = conn;
    this.form = doc.getElementById('preferences-form');
    this.prefError = doc.querySelector('[data-testid="preferences-error"]');
    this.saved = doc.querySelector('[data-testid="preferences-saved"]');
    this.prompts = doc.getElementById('prompt-form');
    this.promptError = doc.querySelector('[data-testid="saved-prompt-error"]');
    this.form?.addEventListener('change', (e) => this.save(e.target));
    this.form?.addEventListener('submit', (e) => e.preventDefault());
    this.prompts?.addEventListener('submit', (e) => { e.preventDefault(); this.savePrompt(); });
    doc.addEventListener('click', (e) => {
      const b = e.target.closest('button[data-action="delete-prompt"]');
      if (b) this.deletePrompt(b);
    });
  }

  // save stores the changed preference; the theme shows at once.
  async save(control) {
    if (!control.name) return;
    this.saved.hidden = true;
    try {
      const prefs = await this.conn.request('update_preferences', { [control.name]: control.value.trim() }, { retry: false });
      showError(this.prefError, null);
      applyTheme(prefs.theme);
      this.saved.hidden = false;
    } catch (err) {
      showError(this.prefError, err);
    }
  }

  async savePrompt() {
    const f = this.prompts;
    const button = f.querySelector('[type="submit"]');
    button.disabled = true;
    try {
      await this.conn.request('create_saved_prompt', { name: f.name.value, text: f.text.value, project: f.project.value }, { retry: false });
      showError(this.promptError, null);
      f.reset();
      await refresh('prompt-list');
    } catch (err) {
      showError(this.promptError, err);
    } finally {
      button.disabled = false;
    }
  }

  async deletePrompt(b) {
    b.disabled = true;
    try {
      await this.conn.request('delete_saved_prompt', { prompt_id: b.closest('[data-prompt-id]').dataset.promptId }, { retry: false });
      showError(this.promptError, null);
      await refresh('prompt-list');
    } catch (err) {
      b.disabled = false;
      showError(this.promptError, err);
    }
  }
}

// applyTheme sets the page's theme (web.theme renders it on first paint).
export function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === 'light' || theme === 'dark' ? theme : 'system';
}
