// MCP Apps in tool cards (docs/ARCHITECTURE.md, Browser UI: MCP Apps).
//
// A tool whose definition names an app (_meta.ui.resourceUri, listed by
// list_tools as its server's `apps`), or whose result links a ui://
// resource, shows that app in its card once the card has its result: the
// resource's HTML, served by GET /agentik/apps/view (which reads it through
// the permission check and sets the Content-Security-Policy its
// _meta.ui.csp declares, no network by default: a srcdoc frame would be
// bound by this page's own CSP), in an iframe sandboxed to scripts only
// (an opaque origin: no cookies, no storage, no access to this page). The page and the app talk JSON-RPC
// over postMessage as the MCP Apps specification says: the app's
// ui/initialize is answered, then it gets the tool's input and result;
// its tools/call of a tool of the same server goes through app_call (a
// turn of its own, with the same approval rules as a model's call, shown
// in the conversation) and is answered with that call's result once its
// card has one. Anything else the app posts (malformed, a method the host
// does not offer, another server's tool, a flood) is refused in the bridge
// and logged once per app; the page is not affected.
//
// Cards are found by watching the message list, so message.js and chat.js
// know nothing of apps.

const PROTOCOL = '2026-01-26';
const MAX_MESSAGE = 1 << 20; // bytes of one bridge message
const BURST = 40; // messages an app may post at once…
const PER_SECOND = 20; // …and then per second
const MAX_HEIGHT = 1200;
const MAX_MESSAGE_TEXT = 32 << 10; // characters of one ui/message text block

export class McpApps {
  constructor({ conn, conversation, send, root = document.body }) {
    this.conn = conn;
    this.conversation = conversation; // () => the open conversation's id
    this.sendMessage = send; // (content) => the chat's send of a user message
    this.servers = null; // list_tools, once read
    this.bridges = new Map(); // iframe window → bridge
    this.waiting = new Map(); // app call id → resolve(card)
    window.addEventListener('message', (e) => {
      const b = this.bridges.get(e.source);
      if (b) b.receive(e.data);
    });
    new MutationObserver(() => this.scan()).observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
    this.scan();
  }

  async tools() {
    if (!this.servers) {
      this.servers = this.conn.request('list_tools', {}).then((r) => r.servers || [], () => { this.servers = null; return []; });
    }
    return this.servers;
  }

  // scan mounts the app of each finished card that has one, and answers
  // the app calls whose cards have their result.
  scan() {
    for (const card of document.querySelectorAll('.tool-card[data-call-id]')) {
      const state = card.dataset.state;
      if (state !== 'done' && state !== 'error') continue;
      const id = card.dataset.callId;
      const w = this.waiting.get(id);
      if (w) { this.waiting.delete(id); w(card); }
      if (card.dataset.app || id.startsWith('app_')) continue; // an app's own call is a plain card
      card.dataset.app = 'pending';
      this.mount(card).catch((err) => { card.dataset.app = 'failed'; console.warn('mcp app:', err?.message || err); });
    }
    for (const [win, b] of this.bridges) if (!b.iframe.isConnected) { this.bridges.delete(win); b.close(); }
  }

  async mount(card) {
    const name = card.querySelector('.tool-name')?.textContent.trim() || '';
    let server = null;
    let uri = null;
    for (const s of await this.tools()) {
      if (s.apps && s.apps[name]) { server = s; uri = s.apps[name]; }
    }
    if (!uri) { // a result that links an app
      const chip = card.querySelector('.tool-result .resource-chip[data-resource^="ui://"]');
      if (chip) {
        uri = chip.dataset.resource;
        server = (await this.tools()).find((s) => s.name === chip.dataset.server) || { name: chip.dataset.server, tools: [] };
      }
    }
    if (!uri) { card.dataset.app = 'none'; return; }
    mountFrame(this, card, `/agentik/apps/view?${new URLSearchParams({ server: server.name, uri })}`, name, server);
  }

  // call runs an app's tools/call through app_call; the answer is the
  // call's result once its card shows it.
  async call(bridge, params) {
    const conv = this.conversation();
    if (!conv) throw rpcError(-32000, 'no conversation is open');
    const name = `${bridge.server.name}__${params.name}`;
    if (!(bridge.server.tools || []).includes(name)) {
      throw rpcError(-32602, `tool ${params.name} is not a tool of server ${bridge.server.name}`);
    }
    const res = await this.conn.request('app_call', { conversation_id: conv, app: bridge.tool, name, arguments: params.arguments || {} });
    const card = await new Promise((resolve) => { this.waiting.set(res.call_id, resolve); this.scan(); });
    const text = card.querySelector('.tool-result code')?.textContent || '';
    return { content: [{ type: 'text', text }], isError: card.dataset.state === 'error' };
  }
}

// mountFrame shows the app at src in card, sandboxed, with its bridge.
function mountFrame(apps, card, src, name, server) {
  const iframe = document.createElement('iframe');
  iframe.className = 'mcp-app';
  iframe.dataset.testid = 'mcp-app';
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.setAttribute('title', `App of ${name}`);
  iframe.setAttribute('referrerpolicy', 'no-referrer');
  iframe.style.height = '160px';
  iframe.src = src;
  const box = document.createElement('div');
  box.className = 'mcp-app-box';
  box.append(iframe);
  card.append(box);
  card.dataset.app = 'shown';
  apps.bridges.set(iframe.contentWindow, new Bridge(apps, card, iframe, name, server));
}

// SharedApps shows the apps of a share link's page (/s/{token}, read-only,
// no socket): the server marks each card whose tool names an app with
// data-app-view, the app's HTML read through the link. The bridge answers
// as in the chat, but the host offers no tools: an app's tools/call is
// refused (and logged once), nothing runs.
export class SharedApps {
  constructor(root = document) {
    this.readOnly = true;
    this.bridges = new Map();
    window.addEventListener('message', (e) => {
      const b = this.bridges.get(e.source);
      if (b) b.receive(e.data);
    });
    for (const card of root.querySelectorAll('.tool-card[data-app-view]')) {
      const name = card.querySelector('.tool-name')?.textContent.trim() || '';
      mountFrame(this, card, card.dataset.appView, name, { name: '', tools: [] });
    }
  }

  async call() {
    throw rpcError(-32601, 'tools/call is not offered in a shared, read-only view');
  }
}

// message posts an app's ui/message into the open conversation as the
// reader's own message, through the chat's send (the send op: its
// permission check, queued while a turn runs).
McpApps.prototype.message = async function message(bridge, params) {
  if (!this.conversation() || !this.sendMessage) throw rpcError(-32000, 'no conversation is open');
  await this.sendMessage(params.content.map((b) => ({ type: 'text', body: b.text })));
  return {};
};

// read reads a resource of the app's own server (read_resource: the
// server is the app's, never one the app names).
McpApps.prototype.read = async function read(bridge, params) {
  try {
    const r = await this.conn.request('read_resource', { server: bridge.server.name, uri: params.uri });
    return { contents: (r.contents || []).map((c) => ({ uri: c.uri, mimeType: c.mime_type, text: c.text, blob: c.blob })) };
  } catch (err) {
    throw rpcError(err?.code === 'not_found' ? -32002 : -32000, err?.message || String(err));
  }
};

SharedApps.prototype.message = async function message() {
  throw rpcError(-32601, 'ui/message is not offered in a shared, read-only view');
};

SharedApps.prototype.read = async function read() {
  throw rpcError(-32601, 'resources/read is not offered in a shared, read-only view');
};

function rpcError(code, message) {
  const e = new Error(message);
  e.rpc = { code, message };
  return e;
}

// Bridge is the page's end of one app's postMessage JSON-RPC.
class Bridge {
  constructor(apps, card, iframe, tool, server) {
    this.apps = apps;
    this.card = card;
    this.iframe = iframe;
    this.tool = tool;
    this.server = server;
    this.tokens = BURST;
    this.last = performance.now();
    this.logged = new Set(); // what was refused and logged already
    this.initialized = false;
  }

  close() { this.closed = true; }

  refuse(why, detail) {
    if (this.logged.has(why)) return;
    this.logged.add(why);
    console.warn(`mcp app of ${this.tool}: refused ${why}`, detail ?? '');
    this.card.dataset.appRefused = why;
  }

  post(msg) {
    if (this.closed || !this.iframe.contentWindow) return;
    this.iframe.contentWindow.postMessage(msg, '*'); // an opaque origin: '*' is the only target
  }

  reply(id, result) { this.post({ jsonrpc: '2.0', id, result }); }

  fail(id, code, message) { this.post({ jsonrpc: '2.0', id, error: { code, message } }); }

  receive(data) {
    const now = performance.now();
    this.tokens = Math.min(BURST, this.tokens + ((now - this.last) / 1000) * PER_SECOND);
    this.last = now;
    if (this.tokens < 1) { this.refuse('flood'); return; }
    this.tokens -= 1;
    let size = 0;
    try { size = JSON.stringify(data)?.length ?? 0; } catch { size = Infinity; }
    const ok = data && typeof data === 'object' && !Array.isArray(data) && data.jsonrpc === '2.0' && size <= MAX_MESSAGE &&
      (data.method === undefined || (typeof data.method === 'string' && data.method.length <= 100)) &&
      (data.id === undefined || typeof data.id === 'string' || typeof data.id === 'number') &&
      (data.params === undefined || (typeof data.params === 'object' && data.params !== null));
    if (!ok) { this.refuse('malformed', data); return; }
    if (data.method === undefined) return; // a response to the host: the host sends no requests
    const isRequest = data.id !== undefined;
    this.handle(data.method, data.params || {}).then(
      (result) => { if (isRequest) this.reply(data.id, result); },
      (err) => {
        if (!err.rpc) this.refuse(data.method, err?.message);
        if (isRequest) this.fail(data.id, err.rpc?.code ?? -32000, err.rpc?.message ?? String(err?.message || err));
      },
    );
  }

  async handle(method, params) {
    switch (method) {
      case 'ui/initialize': return this.initialize(params);
      case 'ui/notifications/initialized': this.sendToolData(); return undefined;
      case 'ui/notifications/size-changed': {
        const h = Number(params.height);
        if (Number.isFinite(h) && h > 0) this.iframe.style.height = `${Math.min(MAX_HEIGHT, Math.ceil(h))}px`;
        return undefined;
      }
      case 'ping': return {};
      case 'notifications/message': return undefined; // the app's log: not kept
      case 'tools/call': {
        if (typeof params.name !== 'string' || (params.arguments !== undefined && (typeof params.arguments !== 'object' || params.arguments === null || Array.isArray(params.arguments)))) {
          this.refuse('tools/call: bad params');
          throw rpcError(-32602, 'tools/call needs name and an arguments object');
        }
        try {
          return await this.apps.call(this, params);
        } catch (err) {
          if (err.rpc) { this.refuse(`tools/call ${params.name}`, err.rpc.message); throw err; }
          throw rpcError(-32000, err?.message || String(err));
        }
      }
      case 'ui/message': {
        if (params.role !== 'user' || !Array.isArray(params.content) || !params.content.length ||
          !params.content.every((b) => b && b.type === 'text' && typeof b.text === 'string' && b.text.length <= MAX_MESSAGE_TEXT)) {
          this.refuse('ui/message: bad params');
          throw rpcError(-32602, 'ui/message needs role "user" and content of text blocks (this host takes text only)');
        }
        try {
          return await this.apps.message(this, params);
        } catch (err) {
          if (err.rpc) { this.refuse('ui/message', err.rpc.message); throw err; }
          return { isError: true }; // the send failed (its error is the chat's)
        }
      }
      case 'resources/read': {
        if (typeof params.uri !== 'string' || !params.uri || params.uri.length > 2048) {
          this.refuse('resources/read: bad params');
          throw rpcError(-32602, 'resources/read needs a uri');
        }
        try {
          return await this.apps.read(this, params);
        } catch (err) {
          if (err.rpc?.code === -32601) this.refuse('resources/read', err.rpc.message);
          throw err;
        }
      }
      default:
        this.refuse(`method ${method}`);
        throw rpcError(-32601, `method ${method} is not offered by this host`);
    }
  }

  initialize(params) {
    this.initialized = true;
    const dark = document.documentElement.dataset.theme === 'dark' || matchMedia('(prefers-color-scheme: dark)').matches;
    return {
      protocolVersion: typeof params.protocolVersion === 'string' ? params.protocolVersion : PROTOCOL,
      hostInfo: { name: 'agentik', version: '1' },
      hostCapabilities: this.apps.readOnly ? { logging: {} } : { serverTools: {}, serverResources: {}, message: { text: {} }, logging: {} },
      hostContext: {
        toolInfo: { tool: { name: this.tool, inputSchema: { type: 'object' } } },
        theme: dark ? 'dark' : 'light',
        displayMode: 'inline',
        availableDisplayModes: ['inline'],
        containerDimensions: { maxHeight: MAX_HEIGHT },
        platform: 'web',
        locale: navigator.language,
      },
    };
  }

  // sendToolData gives the app the card's call: its arguments, then its
  // result.
  sendToolData() {
    if (!this.initialized || this.sent) return;
    this.sent = true;
    let args = {};
    try { args = JSON.parse(this.card.querySelector('[data-testid="tool-arguments"] code')?.textContent || '{}') || {}; } catch { args = {}; }
    this.post({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: args } });
    const text = this.card.querySelector('.tool-result code')?.textContent || '';
    this.post({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: { content: [{ type: 'text', text }], isError: this.card.dataset.state === 'error' } });
  }
}
