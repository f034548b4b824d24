// The people page (web/people.templ): an admin adds users, changes their
// role, disables, enables and deletes them; anyone makes and revokes
// keys (their own; an admin's for anyone), a new key shown this once;
// an admin sets each user's token budget; anyone adds, replaces and
// deletes their own credentials of per-user tool servers (set_credential,
// delete_credential), never shown back.
// Every action is an account op (create_user, update_user, delete_user,
// create_key, revoke_key); the list is then rendered again by the server.
import { refresh, showError } from './manage.js';
import { copyText } from './dom.js';

export class People {
  constructor(doc, conn) {
    this.conn = conn;
    this.error = doc.querySelector('[data-testid="people-error"]');
    this.once = doc.getElementById('key-once');
    doc.addEventListener('submit', (e) => this.onSubmit(e));
    doc.addEventListener('click', (e) => this.onClick(e));
    doc.addEventListener('change', (e) => {
      if (e.target.dataset.action === 'role') this.run(e.target, 'update_user', { user_id: userOf(e.target), role: e.target.value });
    });
  }

  // run sends op and re-renders the list; an error shows as the server
  // wrote it. It returns the op's result (null when it failed).
  async run(control, op, fields) {
    control.disabled = true;
    try {
      const res = await this.conn.request(op, fields, { retry: false });
      showError(this.error, null);
      await refresh('people-list');
      return res;
    } catch (err) {
      showError(this.error, err);
      control.disabled = false;
      return null;
    }
  }

  async onSubmit(e) {
    const form = e.target;
    if (form.id === 'user-form') {
      e.preventDefault();
      const fields = { name: form.name.value, role: form.role.value };
      if (form.email.value.trim()) fields.email = form.email.value.trim();
      await this.run(form.querySelector('[type="submit"]'), 'create_user', fields);
    } else if (form.dataset.action === 'set-budget') {
      e.preventDefault();
      await this.run(form.querySelector('[type="submit"]'), 'update_user', { user_id: userOf(form), budget: form.budget.value.trim() });
    } else if (form.dataset.action === 'set-credential') {
      e.preventDefault();
      const server = form.closest('[data-server]').dataset.server;
      const secret = form.secret.value;
      form.secret.value = ''; // never kept in the page
      await this.run(form.querySelector('[type="submit"]'), 'set_credential', { server, secret });
    } else if (form.dataset.action === 'create-key') {
      e.preventDefault();
      const keys = form.closest('[data-keys]');
      const key = await this.run(form.querySelector('[type="submit"]'), 'create_key', { user_id: keys.dataset.keys, name: form.name.value });
      if (key) this.showKey(keys.dataset.name, key.key);
    }
  }

  onClick(e) {
    const b = e.target.closest('button[data-action]');
    if (!b) return;
    const row = b.closest('[data-user]');
    switch (b.dataset.action) {
      case 'toggle-user':
        this.run(b, 'update_user', { user_id: row.dataset.user, disabled: row.dataset.disabled !== 'true' });
        break;
      case 'delete-user':
        this.run(b, 'delete_user', { user_id: row.dataset.user });
        break;
      case 'revoke-key':
        this.run(b, 'revoke_key', { user_id: b.closest('[data-keys]').dataset.keys, key_id: b.closest('[data-key]').dataset.key });
        break;
      case 'delete-credential':
        this.run(b, 'delete_credential', { server: b.closest('[data-server]').dataset.server });
        break;
      case 'copy-key':
        copyText(this.once.querySelector('[data-field="key"]').textContent);
        break;
      case 'hide-key':
        this.showKey('', '');
        break;
    }
  }

  // showKey shows a new key until dismissed (it cannot be read again).
  showKey(owner, key) {
    this.once.querySelector('[data-field="owner"]').textContent = owner;
    this.once.querySelector('[data-field="key"]').textContent = key;
    this.once.hidden = !key;
  }
}

function userOf(el) {
  return el.closest('[data-user]').dataset.user;
}
