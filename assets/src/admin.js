// The admin panel (/admin, web/admin.templ): model providers, MCP
// servers, the default model, system prompt and budget, and every user's
// chats, read from GET /agentik/admin/settings and changed through the
// REST routes under /agentik/admin (docs/PROTOCOL.md, Admin panel). A
// refused change shows the server's message and changes nothing.
import { h as el } from './dom.js';

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { Accept: 'application/json', ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data?.error?.message || data?.message || `${res.status} ${res.statusText}`);
  return data;
}

const sourceText = (s) => (s === 'env' ? 'from the environment (read-only)' : s === 'file' ? 'from a file (read-only)' : s === 'admin' ? 'set here' : '');

export function mountAdmin(main, toast) {
  const root = main.querySelector('[data-testid="admin"]');
  if (!root) return;
  const q = (id) => root.querySelector(`[data-testid="${id}"]`);
  const fail = (e) => toast(e.message, 'error');

  const render = (v) => {
    q('admin-providers').replaceChildren(...v.providers.map((p) => {
      const li = el('li', { class: 'admin-item', 'data-testid': 'provider-row', 'data-name': p.name, 'data-source': p.source, 'data-available': String(p.available) },
        el('strong', null, p.name), ' ', el('span', { class: 'admin-url' }, p.base_url), ' ',
        el('span', { class: 'admin-models' }, (p.models || []).length ? p.models.join(', ') : 'all it lists'), ' ',
        el('span', { class: 'admin-source' }, sourceText(p.source)), ' ',
        el('span', { class: 'admin-state' }, p.enabled ? (p.available ? 'available' : 'not answering') : 'disabled'));
      if (p.source === 'admin') {
        li.append(
          el('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'provider-toggle', 'data-act': 'toggle-provider' }, p.enabled ? 'Disable' : 'Enable'),
          el('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'provider-delete', 'data-act': 'delete-provider' }, 'Delete'));
        li._provider = p;
      }
      return li;
    }));
    const sel = q('default-model');
    sel.replaceChildren(...(v.models || []).map((m) => el('option', { value: m.id, selected: m.id === v.default_model }, m.available ? m.id : `${m.id} (unavailable)`)));
    if (v.default_model && ![...sel.options].some((o) => o.value === v.default_model)) sel.append(el('option', { value: v.default_model, selected: true }, v.default_model));
    q('default-model-source').textContent = sourceText(v.default_model_source);
    q('admin-mcp-servers').replaceChildren(...v.mcp_servers.map((s) => {
      const li = el('li', { class: 'admin-item', 'data-testid': 'mcp-row', 'data-name': s.name, 'data-state': s.state, 'data-source': s.source },
        el('strong', null, s.name), ' ', el('span', { class: 'admin-state' }, s.state), ' ',
        el('span', { class: 'admin-source' }, sourceText(s.source)), ' ',
        el('span', { class: 'admin-tools', 'data-testid': 'mcp-tools' }, (s.tools || []).join(', ')),
        s.error ? el('span', { class: 'admin-error' }, ` ${s.error}`) : '');
      if (s.source === 'admin') {
        li.append(
          el('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'mcp-toggle', 'data-act': 'toggle-mcp', 'data-enabled': String(s.enabled) }, s.enabled ? 'Disable' : 'Enable'),
          el('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'mcp-restart', 'data-act': 'restart-mcp' }, 'Restart'),
          el('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'mcp-delete', 'data-act': 'delete-mcp' }, 'Delete'));
      }
      return li;
    }));
    const prompt = q('admin-system-prompt');
    prompt.value = v.system_prompt || '';
    prompt.disabled = v.system_prompt_source === 'env';
    q('system-prompt-source').textContent = sourceText(v.system_prompt_source);
    const budget = q('admin-default-budget');
    budget.value = v.default_budget || '';
    budget.disabled = v.default_budget_source === 'env';
    q('default-budget-source').textContent = sourceText(v.default_budget_source);
    root.dataset.loaded = 'true';
  };
  const load = () => api('GET', '/agentik/admin/settings').then(render, fail);
  const change = (method, path, body, note) => api(method, path, body).then((v) => { render(v); if (note) note.textContent = ''; return v; },
    (e) => { if (note) note.textContent = e.message; fail(e); });

  const providerOf = (form) => {
    const f = new FormData(form);
    const models = String(f.get('models') || '').split(',').map((s) => s.trim()).filter(Boolean);
    return { name: String(f.get('name')).trim(), base_url: String(f.get('base_url')).trim(), api_key: String(f.get('api_key') || ''), models, enabled: true };
  };
  root.addEventListener('submit', (e) => {
    const form = e.target.closest('[data-admin-form]');
    if (!form) return;
    e.preventDefault();
    const f = new FormData(form);
    switch (form.dataset.adminForm) {
      case 'provider':
        change('POST', '/agentik/admin/providers', providerOf(form), q('provider-result')).then(() => form.reset(), () => {});
        break;
      case 'default-model':
        change('PUT', '/agentik/admin/default_model', { value: String(f.get('value') || '') });
        break;
      case 'mcp': {
        let entry;
        try { entry = JSON.parse(String(f.get('entry'))); } catch (err) {
          q('mcp-result').textContent = `The entry is not JSON: ${err.message}`;
          return;
        }
        change('POST', '/agentik/admin/mcp_servers', { name: String(f.get('name') || '').trim(), entry }, q('mcp-result')).then(() => form.reset(), () => {});
        break;
      }
      case 'system-prompt':
        change('PUT', '/agentik/admin/system_prompt', { value: String(f.get('value') || '') }).then(() => toast('Saved the system prompt.', 'info'), () => {});
        break;
      case 'default-budget':
        change('PUT', '/agentik/admin/default_budget', { value: String(f.get('value') || '') }).then(() => toast('Saved the default budget.', 'info'), () => {});
        break;
      default:
    }
  });
  root.addEventListener('click', (e) => {
    const b = e.target.closest('[data-admin-action], [data-act]');
    if (!b) return;
    if (b.dataset.adminAction === 'test-provider') {
      const note = q('provider-result');
      note.textContent = 'Testing…';
      api('POST', '/agentik/admin/providers/test', providerOf(b.closest('form'))).then(
        (r) => { note.textContent = `It answers: ${(r.models || []).join(', ') || 'no models listed'}`; },
        (err) => { note.textContent = err.message; });
      return;
    }
    const row = b.closest('[data-name]');
    const name = encodeURIComponent(row?.dataset.name || '');
    switch (b.dataset.act) {
      case 'toggle-provider': {
        const p = row._provider;
        change('POST', '/agentik/admin/providers', { name: p.name, base_url: p.base_url, models: p.models, enabled: !p.enabled });
        break;
      }
      case 'delete-provider': change('DELETE', `/agentik/admin/providers/${name}`); break;
      case 'toggle-mcp': change('POST', '/agentik/admin/mcp_servers', { name: row.dataset.name, enabled: b.dataset.enabled !== 'true' }); break;
      case 'restart-mcp': change('POST', `/agentik/admin/mcp_servers/${name}/restart`); break;
      case 'delete-mcp': change('DELETE', `/agentik/admin/mcp_servers/${name}`); break;
      case 'user-chats': chats(row.dataset.name, row.dataset.label); break;
      default:
    }
  });

  // Users and, on demand, one user's chats (read-only, owner shown).
  const chats = async (user, label) => {
    const list = q('admin-user-chats');
    try {
      const { conversations } = await api('GET', `/agentik/admin/users/${encodeURIComponent(user)}/conversations`);
      list.replaceChildren(...conversations.map((c) => el('li', { class: 'admin-item', 'data-testid': 'admin-user-chat', 'data-id': c.id },
        el('a', { href: `/c/${encodeURIComponent(c.id)}` }, c.title || 'New chat'), ' ', el('span', { class: 'admin-source' }, `owner: ${label}`))));
      if (!conversations.length) list.replaceChildren(el('li', { class: 'admin-item' }, `${label} has no chats.`));
      list.hidden = false;
    } catch (err) { fail(err); }
  };
  api('GET', '/agentik/users').then(({ users }) => {
    q('admin-users').replaceChildren(...(users || []).map((u) => {
      const label = u.email || u.name || u.id;
      return el('li', { class: 'admin-item', 'data-testid': 'admin-user', 'data-name': u.id, 'data-label': label },
        el('strong', null, label), ' ', el('span', { class: 'admin-source' }, u.role || ''), ' ',
        el('button', { type: 'button', class: 'btn btn-ghost', 'data-act': 'user-chats', 'data-testid': 'admin-user-chats-btn' }, 'Chats'));
    }));
  }, () => {});
  load();
  // The MCP servers' states follow the sidebar's tool servers (kept live
  // from the agent stream): read the settings again when they change.
  const servers = document.querySelector('#tool-servers');
  if (servers) {
    let timer = 0;
    new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(load, 50); })
      .observe(servers, { subtree: true, childList: true, attributes: true });
  }
}
