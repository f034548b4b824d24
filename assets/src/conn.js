// Conn is the one WebSocket to /agentik/ws: request/reply by id,
// subscriptions by server sub id, heartbeat, and reconnect with exponential
// backoff and full jitter. It knows nothing about conversations: on every
// (re)connect it calls onOpen, where the app resubscribes from its cursors.
// When access ends (a close 1008, or a connection refused with 401) it
// reconnects no more: the tab goes to the sign-in page, which says why
// (signedOut).

const PING_EVERY = 20000; // ms between heartbeats on an idle connection
const PING_TIMEOUT = 8000; // ms a heartbeat may take before we reconnect
const BACKOFF_MIN = 500;
const BACKOFF_MAX = 15000;

export class Conn {
  constructor(url, { onOpen, onStatus } = {}) {
    this.url = url;
    this.onOpen = onOpen || (() => {});
    this.onStatus = onStatus || (() => {});
    this.ws = null;
    this.nextID = 1;
    this.pending = new Map(); // request id → {op, fields, resolve, reject, retry, onReply}
    this.queue = []; // requests waiting for a connection
    this.subs = new Map(); // server sub id → handler
    this.attempt = 0;
    this.timer = 0;
    this.pingTimer = 0;
    this.status = 'connecting';
    this.closed = false;
    window.addEventListener('online', () => this.reconnectNow());
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') {
        if (!this.ws) this.reconnectNow();
        else this.ping();
      }
    });
  }

  setStatus(s) {
    if (this.status === s) return;
    this.status = s;
    this.onStatus(s);
  }

  connect() {
    clearTimeout(this.timer);
    if (this.closed || this.ws) return;
    this.setStatus(this.attempt === 0 ? 'connecting' : 'reconnecting');
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.setStatus('online');
      this.subs.clear();
      const queued = this.queue;
      this.queue = [];
      this.onOpen();
      for (const r of queued) this.write(r);
      this.armPing();
    };
    // Packed messages (?pack=1): several frames, one per line.
    ws.onmessage = (e) => {
      for (const line of String(e.data).split('\n')) this.receive(line);
    };
    let opened = false;
    ws.addEventListener('open', () => { opened = true; });
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      // 1008: the server ended this credential's access ("<reason>: <words>").
      if (e.code === 1008) { this.signedOut(e.reason.split(':')[0]); return; }
      this.dropped(ws);
      // A handshake refused looks like a network failure (1006): ask.
      if (!opened) this.checkAccess();
    };
    ws.onerror = () => {};
  }

  // checkAccess asks whether this page's credential still holds; a 401
  // ends access as a 1008 does.
  async checkAccess() {
    try {
      const res = await fetch('/agentik/me', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (res.status === 401) this.signedOut('');
    } catch { /* the network: keep reconnecting */ }
  }

  // signedOut stops reconnecting and goes to the sign-in page, back here
  // after signing in. The server says why from what the session cookie
  // names (else from reason); still signed in (a role changed, a rate
  // limit), it sends the tab straight back.
  signedOut(reason) {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.pingTimer);
    const ws = this.ws;
    this.ws = null;
    try { ws?.close(); } catch { /* closed */ }
    this.setStatus('offline');
    const q = new URLSearchParams({ next: location.pathname + location.search + location.hash });
    if (reason) q.set('reason', reason);
    location.assign(`/login?${q}`);
  }

  reconnectNow() {
    if (this.ws || this.closed) return;
    this.attempt = 0;
    this.connect();
  }

  scheduleReconnect() {
    this.attempt++;
    const cap = Math.min(BACKOFF_MAX, BACKOFF_MIN * 2 ** Math.min(this.attempt - 1, 10));
    const delay = cap / 2 + Math.random() * (cap / 2);
    this.setStatus(navigator.onLine === false ? 'offline' : 'reconnecting');
    this.timer = setTimeout(() => this.connect(), delay);
  }

  dropped(ws) {
    if (this.ws !== ws) return;
    this.ws = null;
    clearTimeout(this.pingTimer);
    this.subs.clear();
    // Requests in flight: idempotent ones go again after reconnecting.
    for (const [, r] of this.pending) {
      if (r.retry) this.queue.push(r);
      else r.reject(Object.assign(new Error('connection lost'), { code: 'unavailable' }));
    }
    this.pending.clear();
    if (!this.closed) this.scheduleReconnect();
  }

  // forceReconnect drops a connection that stopped answering.
  forceReconnect() {
    const ws = this.ws;
    if (!ws) return;
    try { ws.close(4000, 'heartbeat timeout'); } catch { /* already closing */ }
    this.dropped(ws);
  }

  armPing() {
    clearTimeout(this.pingTimer);
    this.pingTimer = setTimeout(() => this.ping(), PING_EVERY);
  }

  ping() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const ws = this.ws;
    const deadline = setTimeout(() => { if (this.ws === ws) this.forceReconnect(); }, PING_TIMEOUT);
    this.request('ping', {}, { retry: false }).then(
      () => { clearTimeout(deadline); this.armPing(); },
      () => clearTimeout(deadline),
    );
  }

  // request sends an op and resolves with its result or rejects with an
  // Error carrying .code. With retry (the default), a request cut off by a
  // disconnect is sent again after reconnecting; use it only for idempotent
  // ops (send is idempotent through its client_id).
  request(op, fields = {}, { retry = true, onReply } = {}) {
    return new Promise((resolve, reject) => {
      const r = { op, fields, resolve, reject, retry, onReply };
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.write(r);
      else if (retry) this.queue.push(r);
      else reject(Object.assign(new Error('not connected'), { code: 'unavailable' }));
    });
  }

  write(r) {
    const id = String(this.nextID++);
    this.pending.set(id, r);
    try {
      this.ws.send(JSON.stringify({ ...r.fields, op: r.op, id }));
    } catch {
      // The close handler will requeue or reject it.
    }
  }

  // subscribe sends a subscribe op; handler(frame) receives its event,
  // caught_up and resync frames. Resolves with the reply's result.
  subscribe(fields, handler) {
    return this.request('subscribe', fields, {
      retry: false,
      onReply: (res) => this.subs.set(res.sub, handler),
    });
  }

  unsubscribe(sub) {
    if (!sub || !this.subs.has(sub)) return;
    this.subs.delete(sub);
    this.request('unsubscribe', { sub }, { retry: false }).catch(() => {});
  }

  receive(data) {
    let f;
    try { f = JSON.parse(data); } catch { return; }
    if (f.type === 'reply') {
      const r = this.pending.get(String(f.id));
      if (!r) return;
      this.pending.delete(String(f.id));
      if (f.ok) {
        // Register handlers before the next frame is read.
        if (r.onReply) r.onReply(f.result || {});
        r.resolve(f.result || {});
      } else {
        const err = f.error || { code: 'internal', message: 'request failed' };
        r.reject(Object.assign(new Error(err.message || err.code), { code: err.code }));
      }
      return;
    }
    const handler = this.subs.get(f.sub);
    if (!handler) return;
    if (f.type === 'resync') this.subs.delete(f.sub);
    handler(f);
  }
}
