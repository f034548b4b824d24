// Projects in the browser (web/project.templ). ProjectsNav is the
// sidebar's projects section: each project the reader sees (list_projects)
// as a section with its chats, which are the rows of the chat list whose
// data-project names it (sidebar.js keeps them live; CSS hides them from
// the date groups), mirrored here whenever that list changes; "+" starts a
// chat in the project. It also runs the chat's "Move to a project" dialog,
// and moves a chat dragged from the sidebar onto a project (into it) or
// onto the chat list (out of its project).
// ProjectsPage runs the forms of /projects and /projects/{id}.
import { h } from './dom.js';
import { refresh, showError } from './manage.js';

// DRAG_TYPE carries a dragged sidebar chat's id.
const DRAG_TYPE = 'application/x-agentik-conversation';

export class ProjectsNav {
  constructor({ conn, sidebarEl, navigate, toast }) {
    this.conn = conn;
    this.navigate = navigate;
    this.toast = toast || (() => {});
    this.nav = sidebarEl.querySelector('#project-nav');
    this.list = sidebarEl.querySelector('#conv-list');
    this.projects = [];
    this.loading = null;
    if (!this.nav || !this.list) return;
    let queued = false;
    new MutationObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; this.mirror(); });
    }).observe(this.list, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-project', 'data-running', 'aria-current', 'hidden'], characterData: true });
    this.nav.addEventListener('click', (e) => {
      const add = e.target.closest('[data-action="project-new-chat"]');
      if (add) this.newChat(add.dataset.projectId);
    });
    this.dragging();
    this.dialog = document.getElementById('project-move');
    this.dialog?.querySelector('[data-testid="project-move-apply"]').addEventListener('click', () => this.move());
    document.addEventListener('click', (e) => {
      if (e.target.closest('[data-action="move-project"]')) this.openMove();
    });
  }

  // dragging lets a sidebar chat be dragged onto a project section the
  // reader edits, or onto the chat list (#conv-list's nav) to leave its
  // project. The row's link stays an ordinary draggable link (its URL
  // goes along); the chat's id travels under DRAG_TYPE.
  dragging() {
    const chats = this.list.closest('nav') || this.list;
    const target = (e) => {
      const sec = e.target.closest?.('[data-testid="project-section"]');
      if (sec && this.nav.contains(sec)) return sec.dataset.role === 'viewer' ? null : sec;
      return chats.contains(e.target) ? chats : null;
    };
    const mark = (el) => {
      for (const x of document.querySelectorAll('[data-drop-target]')) if (x !== el) delete x.dataset.dropTarget;
      if (el) el.dataset.dropTarget = 'true';
    };
    document.addEventListener('dragstart', (e) => {
      const row = e.target.closest?.('.conv-item');
      if (!row?.dataset.id || row.dataset.temp || !(this.list.contains(row) || this.nav.contains(row))) return;
      e.dataTransfer.setData(DRAG_TYPE, row.dataset.id);
      e.dataTransfer.effectAllowed = 'copyMove';
    });
    document.addEventListener('dragover', (e) => {
      if (!e.dataTransfer?.types.includes(DRAG_TYPE)) return;
      const el = target(e);
      mark(el);
      if (!el) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'move';
    });
    document.addEventListener('dragleave', (e) => {
      if (!e.relatedTarget || !e.relatedTarget.closest?.('[data-drop-target]')) mark(null);
    });
    document.addEventListener('dragend', () => mark(null));
    document.addEventListener('drop', (e) => {
      const id = e.dataTransfer?.getData(DRAG_TYPE);
      const el = id && target(e);
      mark(null);
      if (!el) return;
      e.preventDefault();
      const project = el === chats ? '' : el.dataset.projectId;
      const from = this.list.querySelector(`[data-id="${CSS.escape(id)}"]`)?.dataset.project || '';
      if (project === from) return;
      this.moveChat(id, project);
    });
  }

  // moveChat puts conversation id into project ('' : out of its project).
  async moveChat(id, project) {
    try {
      await this.conn.request('update_conversation', { conversation_id: id, project }, { retry: false });
      const name = this.projects.find((p) => p.id === project)?.name;
      this.toast(project ? `Moved into ${name || 'the project'}.` : 'Moved out of its project.');
    } catch (err) {
      this.toast(`Could not move the chat: ${err.message}`, 'error');
    }
  }

  // load (re)reads the projects the reader sees, at every connect and
  // when a chat names a project not known yet (they were just added).
  load() {
    if (!this.nav) return Promise.resolve();
    this.loading ||= this.conn.request('list_projects', {}).then(({ projects }) => {
      this.projects = projects || [];
      this.render();
    }, () => {}).finally(() => { this.loading = null; });
    return this.loading;
  }

  render() {
    this.nav.replaceChildren(...this.projects.map((p) => {
      const add = h('button', { type: 'button', class: 'icon-btn', 'data-action': 'project-new-chat', 'data-project-id': p.id, 'aria-label': `New chat in ${p.name}`, title: 'New chat in this project', hidden: p.role === 'viewer' }, '+');
      return h('section', { class: 'project-section', 'data-testid': 'project-section', 'data-project-id': p.id, 'data-role': p.role || '' },
        h('div', { class: 'project-head' }, h('a', { class: 'project-name', href: `/projects/${encodeURIComponent(p.id)}` }, p.name), add),
        h('ul', { class: 'project-chats' }));
    }));
    this.mirror();
  }

  // mirror lists in each project's section the chat rows that are in it.
  mirror() {
    const by = new Map();
    for (const li of this.list.children) {
      const pid = li.dataset.project;
      if (!pid) continue;
      if (!by.has(pid)) by.set(pid, []);
      by.get(pid).push(li);
    }
    for (const pid of by.keys()) {
      if (!this.projects.some((p) => p.id === pid)) { this.load(); break; }
    }
    for (const sec of this.nav.children) {
      const rows = (by.get(sec.dataset.projectId) || []).map((li) => {
        const a = li.querySelector('a');
        const link = h('a', { class: 'conv-link', href: a.getAttribute('href'), 'aria-current': a.getAttribute('aria-current') },
          h('span', { class: 'conv-title', 'data-testid': 'conversation-title' }, li.querySelector('.conv-title')?.textContent || ''));
        return h('li', { class: 'conv-item', 'data-testid': 'project-chat', 'data-id': li.dataset.id, 'data-running': li.dataset.running }, link);
      });
      sec.querySelector('.project-chats').replaceChildren(...rows);
    }
  }

  async newChat(project) {
    try {
      const c = await this.conn.request('create_conversation', { project }, { retry: false });
      await this.navigate(`/c/${encodeURIComponent(c.id)}`);
    } catch (err) {
      this.toast(`Could not start a chat in the project: ${err.message}`, 'error');
    }
  }

  openMove() {
    const id = document.getElementById('main')?.dataset.conversationId;
    if (!id || !this.dialog) return;
    const current = this.list.querySelector(`[data-id="${CSS.escape(id)}"]`)?.dataset.project || '';
    const select = this.dialog.querySelector('select');
    const options = [h('option', { value: '' }, 'No project')];
    for (const p of this.projects) {
      if (p.role === 'viewer') continue;
      options.push(h('option', { value: p.id }, p.name));
    }
    select.replaceChildren(...options);
    select.value = current;
    showError(this.dialog.querySelector('[data-testid="project-move-error"]'), null);
    this.dialog.showModal();
  }

  async move() {
    const id = document.getElementById('main')?.dataset.conversationId;
    const project = this.dialog.querySelector('select').value;
    try {
      await this.conn.request('update_conversation', { conversation_id: id, project }, { retry: false });
      this.dialog.close();
      this.toast(project ? 'Moved into the project.' : 'Moved out of its project.');
    } catch (err) {
      showError(this.dialog.querySelector('[data-testid="project-move-error"]'), err);
    }
  }
}

// memberKey names a member row (a user's or a group's) in a members list
// or a table row's dataset.
function memberKey(m) {
  const g = m.group_id ?? m.groupId;
  return g ? `g:${g}` : `u:${m.user_id ?? m.userId}`;
}

// ProjectsPage runs /projects (the create form) and /projects/{id} (the
// settings, the members, the groups, delete).
export class ProjectsPage {
  constructor(doc, conn) {
    this.conn = conn;
    this.doc = doc;
    doc.addEventListener('submit', (e) => {
      if (e.target.id === 'project-form') { e.preventDefault(); this.create(e.target); }
      if (e.target.id === 'project-edit') { e.preventDefault(); this.save(e.target); }
      if (e.target.id === 'member-form') { e.preventDefault(); this.addMember(e.target); }
      if (e.target.id === 'group-member-form') { e.preventDefault(); this.addGroup(e.target); }
    });
    doc.addEventListener('click', (e) => {
      const a = e.target.closest('[data-action]');
      if (a?.dataset.action === 'member-remove') { const key = memberKey(a.closest('tr').dataset); this.setMembers((ms) => ms.filter((m) => memberKey(m) !== key)); }
      if (a?.dataset.action === 'project-delete') this.remove();
    });
    doc.addEventListener('change', (e) => {
      const s = e.target.closest('[data-action="member-role"]');
      if (s) { const key = memberKey(s.closest('tr').dataset); this.setMembers((ms) => ms.map((m) => (memberKey(m) === key ? { ...m, role: s.value } : m))); }
    });
  }

  error() { return this.doc.querySelector('[data-testid="project-error"]'); }

  id() { return this.doc.getElementById('project-edit')?.dataset.projectId; }

  async create(form) {
    try {
      const p = await this.conn.request('create_project', { name: form.name.value }, { retry: false });
      location.assign(`/projects/${encodeURIComponent(p.id)}`);
    } catch (err) {
      showError(this.error(), err);
    }
  }

  async save(form) {
    const knowledge = [...form.querySelectorAll('input[name="knowledge"]:checked')].map((i) => i.value);
    await this.update({ name: form.name.value, instructions: form.instructions.value, agent: form.agent.value, knowledge });
  }

  members() {
    return [...this.doc.querySelectorAll('[data-testid="project-member"]')].map((tr) => (tr.dataset.groupId
      ? { group_id: tr.dataset.groupId, role: tr.dataset.role }
      : { user_id: tr.dataset.userId, role: tr.dataset.role }));
  }

  addGroup(form) {
    return this.update({ members: [...this.members(), { group_id: form.group.value, role: form.role.value }] });
  }

  async addMember(form) {
    await this.update({ members: [...this.members(), { email: form.email.value.trim(), role: form.role.value }] });
    form.email.value = '';
  }

  setMembers(change) { return this.update({ members: change(this.members()) }); }

  async update(fields) {
    try {
      await this.conn.request('update_project', { project_id: this.id(), ...fields }, { retry: false });
      showError(this.error(), null);
      await refresh('project-main');
      this.doc.body.dataset.saved = String(Number(this.doc.body.dataset.saved || 0) + 1);
    } catch (err) {
      showError(this.error(), err);
    }
  }

  async remove() {
    if (!confirm('Delete this project? Its chats go back to their owners.')) return;
    try {
      await this.conn.request('delete_project', { project_id: this.id() }, { retry: false });
      location.assign('/projects');
    } catch (err) {
      showError(this.error(), err);
    }
  }
}
