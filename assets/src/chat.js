// Chat is the open conversation: persisted messages (deduped by id), the
// in-progress rendering of the running turn built from live events since
// the last message event, and the cursor that resumes it after a reload or
// a network drop (DESIGN.md §3 turn_seq).
import { h } from './dom.js';
import {
  assistantMessage, errorMessage, reasoningEl, setToolResult, streamingAnswer, toolCard,
  unknownMessage, upgradeMarkdown, usageEl, userMessage,
} from './message.js';

// delegateSlug is the agent a delegation's tool (agent__<slug>) asks.
function delegateSlug(tool) {
  return String(tool || '').replace(/^agent__/, '');
}
import { StreamRenderer } from './markdown.js';
import { Follower } from './follow.js';
import { isImageType } from './rules.js';
import { afterTurn, gaugeWindow, placeDivider, setGauge, summaryMessage } from './context.js';
import { QueueView } from './queue.js';
import { decided, showApproval } from './approval.js';
import { elicited, showElicitation, showProgress } from './elicit.js';
import { Delegation, childLink } from './agents.js';
import { memoryNote } from './memory.js';
import { showModel } from './model.js';

const EARLIER_PAGE = 200; // messages per history request ("Show earlier messages", resync)

export class Chat {
  constructor({ main, conn, conv, onRunning, onToast }) {
    this.main = main;
    this.conn = conn;
    this.id = conv.id;
    this.temp = !!conv.temp;
    this.apiRequest = !!conv.api_request; // a stateless API request's (web.APIRequestNote)
    this.running = !!conv.running;
    this.onRunning = onRunning || (() => {});
    this.toast = onToast || (() => {});
    this.scroller = main.querySelector('#scroller');
    this.list = main.querySelector('#messages');
    this.live = main.querySelector('#live');
    this.seen = new Set();
    this.pending = new Map(); // client_id → pending user message element
    this.parts = []; // live parts: {kind, el, text, ...}
    this.mode = 'response';
    this.dirty = new Set();
    this.frame = 0;
    this.sub = null;
    this.turnAssistants = []; // this turn's answers: its usage shows on the last
    // A turn that fails stores an error message, then sends an error event:
    // the event is shown only when no stored error came first (also when
    // a reload replays the end of a failed turn after its stored error).
    this.turnErrored = this.list.lastElementChild?.dataset.type === 'error';
    this.disposed = false;

    let lastMsgSeq = 0;
    for (const el of this.list.querySelectorAll('[data-id]')) {
      this.seen.add(el.dataset.id);
      if (el.dataset.resultId) this.seen.add(el.dataset.resultId);
      lastMsgSeq = Math.max(lastMsgSeq, Number(el.dataset.seq || 0));
    }
    for (const el of this.list.querySelectorAll('[data-result-id]')) this.seen.add(el.dataset.resultId);
    lastMsgSeq = Math.max(lastMsgSeq, Number(conv.last_seq || 0));
    // Resume point: a running turn is replayed from its first event, so the
    // in-progress answer is rebuilt; messages already on the page dedupe.
    // Not from an earlier point: the events before the turn belong to
    // turns that ended (the page holds their messages), and replaying the
    // last one's end would stop this one in the page (a regenerate's first
    // event comes after the answer it replaces and that answer's end, and
    // the question before them is the path's last message).
    this.cursor = this.running && conv.turn_seq > 0 ? conv.turn_seq - 1 : lastMsgSeq;
    // A turn whose first event is no message on the page is a regenerate
    // (it starts by moving the head): its answer comes live, without the
    // "‹ 2 / 2 ›" only a history read knows (see Branches.turnEnded).
    this.branchTurn = this.running && conv.turn_seq > 0 && !this.list.querySelector(`[data-seq="${conv.turn_seq}"]`);
    this.queue = new QueueView(this.live, { onCancel: (id) => this.cancelQueued(id) });
    if (conv.queued > 0) this.loadQueue();
    this.follower = new Follower(this.scroller, main.querySelector('#thread'), main.querySelector('#jump-latest'));
    this.upgradeAll();
    this.follower.toBottom();
  }

  dispose() {
    for (const d of this.delegations || []) d.dispose();
    this.disposed = true;
    cancelAnimationFrame(this.frame);
    this.follower.dispose();
    this.conn.unsubscribe(this.sub);
    this.sub = null;
  }

  // upgradeAll renders server-rendered plain text as markdown, newest first,
  // in small slices so a long history stays responsive.
  upgradeAll() {
    let done;
    this.rendered = new Promise((r) => { done = r; });
    const raw = [...this.list.querySelectorAll('.md-raw')].reverse();
    // The follower keeps the view on the latest message while the history
    // above it grows into rendered markdown, until the user scrolls up.
    const step = () => {
      if (this.disposed) return;
      const t0 = performance.now();
      while (raw.length && performance.now() - t0 < 12) upgradeMarkdown(raw.shift());
      if (!this.main.dataset.visible) {
        this.main.dataset.visible = 'true';
        performance.mark('agentik:visible'); // the latest messages are rendered
      }
      if (raw.length) {
        setTimeout(step, 0);
        return;
      }
      requestAnimationFrame(() => {
        this.main.dataset.rendered = 'true';
        performance.mark('agentik:rendered');
        done();
      });
    };
    step();
  }

  // reveal scrolls message id into view and highlights it (a search
  // result), loading earlier pages of the history until it is on the
  // page. It reports whether the message was found.
  async reveal(id) {
    const find = () => [...this.list.querySelectorAll('[data-id], [data-result-id]')]
      .find((el) => el.dataset.id === id || el.dataset.resultId === id);
    let el = find();
    for (let btn, pages = 0; !el && (btn = this.main.querySelector('[data-action="load-earlier"]')) && !btn.disabled && !this.disposed && pages < 100; pages++) {
      await this.loadEarlier(btn);
      el = find();
    }
    if (!el || this.disposed) return false;
    this.follower.release();
    await this.rendered;
    // Rendering (markdown, content-visibility) moves things for a few
    // frames: scroll again until the match stays where it was put.
    for (let i = 0; i < 3; i++) {
      el.scrollIntoView({ block: 'center' });
      await new Promise((r) => requestAnimationFrame(r));
    }
    el.classList.add('msg-found');
    el.dataset.found = 'true';
    setTimeout(() => el.classList.remove('msg-found'), 4000);
    return true;
  }

  // subscribe (re)subscribes from the cursor; called on every connect.
  subscribe() {
    if (this.disposed) return;
    const fields = { stream: 'conversation', conversation_id: this.id };
    if (!this.temp) fields.after = this.cursor;
    this.sub = null;
    this.conn.subscribe(fields, (f) => this.onFrame(f)).then(
      (res) => {
        this.sub = res.sub;
        this.main.dataset.subscribed = 'true';
        if (this.temp) this.showWaiting();
      },
      (err) => {
        if (err.code === 'not_found') this.toast('This conversation no longer exists.', 'error');
      },
    );
  }

  // showWaiting adds the approval controls of the calls that wait: a temp
  // conversation's events are not replayed (they have no seq), so a tab
  // that opens it mid-wait (an API request's, from the sidebar) learns of
  // them from the conversation, their arguments from their cards.
  async showWaiting() {
    let conv;
    try {
      conv = await this.conn.request('get_conversation', { conversation_id: this.id });
    } catch {
      return; // gone: the deleted event says so
    }
    if (this.disposed) return;
    for (const callId of conv.waiting || []) {
      const card = this.toolCardOf(callId);
      const args = card?.querySelector('[data-testid="tool-arguments"]')?.textContent;
      showApproval(card, { callId, args }, (body) => this.decide(body));
    }
  }

  onFrame(f) {
    if (this.disposed) return;
    if (f.type === 'event') this.onEvent(f.event);
    else if (f.type === 'caught_up') this.main.dataset.caughtUp = String(f.seq);
    else if (f.type === 'resync') this.resync(f);
  }

  // resync: the server dropped our subscription. For a slow consumer the
  // cursor is still good; otherwise subscribe live first, then fetch the
  // history we may have missed (deduped by id), so nothing falls in between.
  async resync(f) {
    this.sub = null;
    if (f.reason === 'slow_consumer' || this.temp) {
      this.subscribe();
      return;
    }
    const fields = { stream: 'conversation', conversation_id: this.id };
    try {
      const res = await this.conn.subscribe(fields, (fr) => this.onFrame(fr));
      this.sub = res.sub;
      // Page through what was missed: replies stay small however much it is.
      // (the highest seq: a divider sits before messages older than it).
      // A page also ends at the server's byte bound: next_offset says
      // where the next starts (absent at the end).
      const after = Math.max(0, ...[...this.list.querySelectorAll('[data-seq]')].map((el) => Number(el.dataset.seq || 0)));
      for (let offset = 0; ;) {
        const { messages = [], next_offset: next } = await this.conn.request('get_messages', { conversation_id: this.id, after, offset, limit: EARLIER_PAGE });
        for (const m of messages) this.onMessage(m);
        if (!next || this.disposed) break;
        offset = next;
      }
      this.cursor = Math.max(this.cursor, Number(res.head || 0));
    } catch (err) {
      this.toast(`Could not resync: ${err.message}`, 'error');
    }
  }

  onEvent(ae) {
    if (!ae || ae.type !== 'conversation' || ae.conversation_id !== this.id) return;
    if (ae.seq) {
      if (ae.seq <= this.cursor) return; // already applied
      this.cursor = ae.seq;
    }
    const ev = ae.event || {};
    if (ev.type !== 'end') this.turnSeen = true;
    switch (ev.type) {
      case 'message':
        this.onMessage(ev.message);
        // A turn started: its answer is pending until the model's first event.
        if (ev.message?.type === 'user_message') this.pendingAnswer();
        break;
      case 'start_reasoning': this.mode = 'reasoning'; this.assistantPart(); break;
      case 'start_response': this.mode = 'response'; this.assistantPart(); break;
      case 'append_text': this.appendText(ev.text || ''); break;
      case 'append_image': this.appendImage(ev); break;
      case 'tool_call': this.liveToolCall(ev); break;
      case 'tool_result': this.liveToolResult(ev); break;
      case 'error': this.liveError(ev); break;
      case 'interrupted': this.liveInterrupted(); break;
      case 'end': this.end(ev); break;
      case 'queued': if (!this.seen.has(ev.message_id)) this.queue.add(ev.message_id, ev.content); break;
      case 'queue_cancelled': this.queue.remove(ev.message_id); break;
      case 'approval_request': showApproval(this.toolCardOf(ev.call_id), { callId: ev.call_id, args: ev.arguments }, (body) => this.decide(body)); break;
      case 'approval': decided(this.toolCardOf(ev.call_id), ev); break;
      case 'elicitation_request': showElicitation(this.toolCardOf(ev.call_id), this.live, ev, (body) => this.elicit(body)); break;
      case 'elicitation': elicited(this.main, ev); break;
      case 'tool_progress': showProgress(this.toolCardOf(ev.call_id), ev.progress); break;
      case 'delegation': this.delegated(ev); break;
      case 'memory_updated': memoryNote(this.toolCardOf(ev.call_id), ev.memory); break;
      default: break;
    }
  }

  setRunning(r) {
    if (this.running === r) return;
    this.running = r;
    this.main.dataset.running = String(r);
    this.onRunning(this.id, r);
  }

  // --- persisted messages -------------------------------------------------

  onMessage(m) {
    if (!m) return;
    if (m.type === 'user_message') {
      this.setRunning(true);
      this.turnAssistants = [];
      this.turnErrored = false;
      this.mode = 'response';
      const p = m.client_id && this.pending.get(m.client_id);
      if (p) { p.remove(); this.pending.delete(m.client_id); }
      this.queue.remove(m.id); // a queued send that started
    }
    if (m.type === 'error') this.turnErrored = true;
    const liveTool = m.type === 'tool_call' ? this.parts.find((p) => p.kind === 'tool' && p.callId === m.call_id) : null;
    this.supersede(m);
    if (m.id && this.seen.has(m.id)) return;
    if (m.id) this.seen.add(m.id);
    if (m.type === 'tool_result') {
      const card = this.findCard(m.call_id);
      if (card) {
        setToolResult(card, { id: m.id, result: m.result, isError: m.is_error, images: m.images, resources: m.resources });
        childLink(card, m.child_conversation_id, delegateSlug(card.querySelector('.tool-name')?.textContent));
        memoryNote(card, m.memory);
        return;
      }
    }
    const el = this.render(m);
    // Laid out at once (not as a placeholder), so replacing the live answer
    // does not shrink the thread under a user reading it.
    el.classList.add('msg-new');
    if (m.type === 'assistant_message') {
      showModel(m.model); // the model that answered (model.js)
      this.turnAssistants.push(el);
      this.callUsage = m.usage || null; // the last model call's own usage
    }
    // A live result that came before the persisted call stays visible.
    if (m.type === 'tool_call' && liveTool && liveTool.result !== undefined) setToolResult(el, { result: liveTool.result, isError: liveTool.isError, images: liveTool.images, resources: liveTool.resources });
    // A compaction's divider goes between turns: before the question it
    // kept first, which a compaction during a turn comes after.
    if (m.type !== 'summary_message' || !placeDivider(this.list, el)) this.list.append(el);
    this.main.querySelector('#empty-state')?.remove();
    if (m.type === 'summary_message' && !this.running) this.refreshContext();
  }

  // loadEarlier prepends a page of the history before what the page shows
  // (the page renders only the latest messages of a long conversation),
  // keeping the view where it was.
  async loadEarlier(btn) {
    if (btn.disabled) return;
    const omitted = Number(btn.dataset.omitted || 0);
    if (omitted <= 0) return;
    btn.disabled = true;
    try {
      // The latest messages before those shown, as many as the server's
      // byte bound lets one page hold; next_end is what is left before.
      const { messages, next_end: left = 0 } = await this.conn.request('get_messages', { conversation_id: this.id, end: omitted, limit: EARLIER_PAGE });
      const box = h('div');
      for (const m of messages || []) {
        if (m.id && this.seen.has(m.id)) continue;
        if (m.id) this.seen.add(m.id);
        if (m.type === 'tool_result') {
          const card = [...box.querySelectorAll('.tool-card')].find((c) => c.dataset.callId === m.call_id);
          if (card) { setToolResult(card, { id: m.id, result: m.result, isError: m.is_error, images: m.images, resources: m.resources }); continue; }
        }
        const el = box.appendChild(this.render(m));
        if (m.type === 'summary_message') placeDivider(box, el);
      }
      const before = this.scroller.scrollHeight;
      this.list.prepend(...box.children);
      this.scroller.scrollTop += this.scroller.scrollHeight - before;
      if (left > 0) {
        btn.dataset.omitted = String(left);
        btn.textContent = `Show ${left} earlier messages`;
      } else {
        btn.closest('.earlier')?.remove();
      }
    } catch (err) {
      this.toast(`Could not load earlier messages: ${err.message}`, 'error');
    } finally {
      btn.disabled = false;
    }
  }

  // render makes the element of a stored message, outside the live flow.
  render(m) {
    switch (m.type) {
      case 'user_message': return userMessage(m);
      case 'assistant_message': return assistantMessage(m);
      case 'tool_call': return toolCard({ id: m.id, seq: m.seq, callId: m.call_id, name: m.name, args: m.arguments });
      case 'tool_result': {
        const el = toolCard({ id: null, seq: m.seq, callId: m.call_id, name: m.name, args: '' });
        el.setAttribute('data-id', m.id);
        setToolResult(el, { id: m.id, result: m.result, isError: m.is_error, images: m.images, resources: m.resources });
        memoryNote(el, m.memory);
        return el;
      }
      case 'error': return errorMessage({ ...m, message: m.message });
      case 'summary_message': return summaryMessage(m);
      default: return unknownMessage(m);
    }
  }

  findCard(callId) {
    return [...this.list.querySelectorAll('.tool-card')].find((c) => c.dataset.callId === callId) || null;
  }

  // supersede removes the live parts that a persisted message replaces.
  supersede(m) {
    const drop = (pred) => {
      this.parts = this.parts.filter((p) => {
        if (!pred(p)) return true;
        p.el.remove();
        this.dirty.delete(p);
        return false;
      });
    };
    switch (m.type) {
      case 'assistant_message': drop((p) => p.kind === 'assistant'); break;
      case 'tool_call': {
        drop((p) => p.kind === 'tool' && p.callId === m.call_id);
        break;
      }
      case 'tool_result': drop((p) => p.kind === 'tool' && p.callId === m.call_id); break;
      case 'error': drop((p) => p.kind === 'error'); break;
      default: break;
    }
  }

  // --- live parts ---------------------------------------------------------

  assistantPart(running = true) {
    const last = this.parts[this.parts.length - 1];
    if (last && last.kind === 'assistant') { if (running) this.setRunning(true); return last; }
    const el = streamingAnswer();
    const md = el.querySelector('.md');
    const p = { kind: 'assistant', el, md, text: '', reasoning: '', reasoningEl: null };
    this.parts.push(p);
    this.live.append(el);
    if (running) this.setRunning(true);
    return p;
  }

  // pendingAnswer shows that an answer is coming before the model's first
  // event: the live answer, empty (a typing indicator, aria-busy), which
  // the first event fills in. It is the last live part or a new one.
  pendingAnswer(running = true) {
    return this.assistantPart(running);
  }

  // dropPending removes a pending answer that no event filled in.
  dropPending() {
    this.parts = this.parts.filter((p) => {
      if (p.kind !== 'assistant' || p.text || p.reasoning || p.el.querySelector('.msg-image')) return true;
      p.el.remove();
      this.dirty.delete(p);
      return false;
    });
  }

  appendText(text) {
    const p = this.assistantPart();
    if (this.mode === 'reasoning') {
      p.reasoning += text;
      if (!p.reasoningEl) {
        p.reasoningEl = reasoningEl('', true);
        p.el.prepend(p.reasoningEl);
      }
    } else {
      p.text += text;
      if (p.reasoningEl && !p.reasoningClosed) {
        p.reasoningClosed = true; // fold the thinking away once the answer starts
        p.reasoningEl.open = false;
      }
    }
    this.markDirty(p);
  }

  appendImage(ev) {
    if (!isImageType(ev.mime)) return;
    const p = this.assistantPart();
    p.el.querySelector('.msg-body').append(h('img', { class: 'msg-image', src: `data:${ev.mime};base64,${ev.data}`, alt: 'Generated image' }));
  }

  liveToolCall(ev) {
    this.dropPending();
    const el = toolCard({ callId: ev.call_id, name: ev.name, args: ev.arguments });
    this.parts.push({ kind: 'tool', callId: ev.call_id, el });
    this.live.append(el);
    this.setRunning(true);
  }

  // delegated shows a delegation's child live in its tool card.
  delegated(ev) {
    const card = this.toolCardOf(ev.call_id);
    if (!card || !ev.child_conversation_id) return;
    this.delegations = this.delegations || [];
    this.delegations.push(new Delegation({ conn: this.conn, card, childId: ev.child_conversation_id, agent: ev.agent || delegateSlug(card.querySelector('.tool-name')?.textContent) }));
  }

  // toolCardOf is the card of a call: live, or persisted.
  toolCardOf(callId) {
    const live = this.parts.find((p) => p.kind === 'tool' && p.callId === callId);
    return live ? live.el : this.findCard(callId);
  }

  async decide(body) {
    try {
      await this.conn.request('approve', { conversation_id: this.id, ...body }, { retry: false });
      // Decided: the conversation goes on, and so does the person typing.
      this.main.querySelector('#prompt')?.focus();
    } catch (err) {
      this.toast(err.code === 'conflict' ? 'That call was already decided.' : `Could not decide: ${err.message}`, 'error');
    }
  }

  // elicit answers a tool's request for input; a refusal is thrown for the
  // form to show (elicit.js).
  async elicit(body) {
    try {
      await this.conn.request('elicit', { conversation_id: this.id, ...body }, { retry: false });
      this.main.querySelector('#prompt')?.focus();
    } catch (err) {
      if (err.code === 'conflict') { this.toast('That request was already answered.', 'error'); return; }
      throw err;
    }
  }

  liveToolResult(ev) {
    const live = this.parts.find((p) => p.kind === 'tool' && p.callId === ev.call_id);
    const card = live ? live.el : this.findCard(ev.call_id);
    if (card) setToolResult(card, { result: ev.result, isError: ev.is_error, images: ev.images, resources: ev.resources });
    if (live) { live.result = ev.result; live.isError = ev.is_error; live.images = ev.images; live.resources = ev.resources; }
    if (this.running) this.pendingAnswer(); // the model's next round
  }

  liveError(ev) {
    this.dropPending();
    if (this.turnErrored) return;
    const el = errorMessage({ type: 'error', message: ev.message, code: ev.code });
    this.parts.push({ kind: 'error', el });
    this.live.append(el);
  }

  liveInterrupted() {
    const last = this.parts.findLast((p) => p.kind === 'assistant');
    if (last) last.el.classList.add('interrupted');
    this.interrupted = true;
  }

  end(ev) {
    this.flush();
    this.dropPending();
    // Live parts that no message replaced stay, finished, so nothing shown is lost.
    for (const p of this.parts) {
      p.el.classList.remove('streaming');
      p.el.removeAttribute('aria-busy');
      this.list.append(p.el);
    }
    this.parts = [];
    this.live.replaceChildren();
    // The turn's total (all its model calls) replaces each answer's own.
    // One Regenerate per turn, on its last answer (web/page.go does the same).
    const last = this.turnAssistants[this.turnAssistants.length - 1];
    for (const el of this.turnAssistants) if (el !== last) el.querySelector('[data-branch="regenerate"]')?.remove();
    if (ev.usage && last) {
      for (const el of this.turnAssistants) el.querySelector('[data-testid="usage"]')?.remove();
      const meta = last.querySelector('.msg-meta');
      meta.insertBefore(usageEl(ev.usage), meta.querySelector('.branch-ctl') || meta.lastElementChild);
    }
    this.turnAssistants = [];
    this.turnErrored = false;
    this.interrupted = false;
    this.mode = 'response';
    this.setRunning(false);
    // The gauge counts the turn's answer at once, from that model call's
    // own usage (its prompt, plus what it wrote), then from the server.
    // An end alone (the resume of a page rendered after its turn) changes
    // nothing the page does not show.
    const u = this.callUsage;
    const win = gaugeWindow(this.main);
    if (u && win) setGauge(this.main, afterTurn({ tokens: u.prompt_tokens || 0, window: win }, u));
    if (this.turnSeen) this.refreshContext(u);
    this.callUsage = null;
    this.turnSeen = false;
  }

  // refreshContext updates the context gauge from the conversation, whose
  // context the turn (or a compaction) just changed; usage is the usage of
  // the turn's last answer, which the conversation's last prompt lacks.
  refreshContext(usage = null) {
    if (this.disposed) return;
    this.conn.request('get_conversation', { conversation_id: this.id }).then(
      (conv) => { if (!this.disposed) setGauge(this.main, afterTurn(conv.context, usage)); },
      () => {},
    );
  }

  // --- rendering, at most once per frame, only the streaming parts --------

  markDirty(p) {
    this.dirty.add(p);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (!this.dirty.size) return;
    const t0 = performance.now();
    for (const p of this.dirty) {
      if (p.reasoningEl && p.reasoningShown !== p.reasoning.length) {
        // Append only what is new: the cost of a frame does not grow with the text.
        const body = p.reasoningEl.querySelector('.reasoning-body');
        if (!p.reasoningNode) { p.reasoningNode = document.createTextNode(''); body.replaceChildren(p.reasoningNode); }
        p.reasoningNode.appendData(p.reasoning.slice(p.reasoningShown || 0));
        p.reasoningShown = p.reasoning.length;
      }
      if (p.text) {
        if (!p.stream) p.stream = new StreamRenderer(p.md);
        p.stream.update(p.text);
      }
    }
    this.dirty.clear();
    // One measure per rendered frame: the browser tests check that a frame
    // late in a long answer costs what an early one did.
    performance.measure('agentik:render', { start: t0 });
  }

  // --- sending --------------------------------------------------------------

  // send posts content; the message shows at once, marked pending, and is
  // replaced by the server's echo. A dropped connection retries with the
  // same client_id, so the turn starts once.
  // showSend shows message content being sent with clientId (its
  // events replace it) and, when it starts a turn (idle), the pending
  // answer; undo takes both back when the send is refused.
  showSend(content, clientId) {
    const el = userMessage({ type: 'user_message', content, client_id: clientId }, { pending: true });
    this.pending.set(clientId, el);
    this.list.append(el);
    const empty = this.main.querySelector('#empty-state');
    if (empty) empty.hidden = true;
    this.follower.jump(); // sending is a wish to see the answer
    const pending = this.running ? null : this.pendingAnswer(false);
    const undo = () => {
      el.remove();
      if (pending) this.dropPending();
      this.pending.delete(clientId);
      if (empty && !this.list.children.length) empty.hidden = false;
    };
    return { el, pending, undo };
  }

  async send(content) {
    const clientId = newID();
    const { el, pending, undo } = this.showSend(content, clientId);
    try {
      // While a turn runs the send waits in the queue instead of failing busy.
      const req = { conversation_id: this.id, content, client_id: clientId, on_busy: 'queue' };
      if (this.main.dataset.actAs === 'true') req.act_as_admin = true; // app.js actAsAdmin
      const res = await this.conn.request('send', req);
      if (res && res.queued) {
        if (pending && !pending.text) this.dropPending();
        if (this.seen.has(res.message_id)) el.remove(); // it started already
        else this.queue.add(res.message_id, content, el);
      }
    } catch (err) {
      undo();
      throw err;
    }
  }

  interrupt() {
    return this.conn.request('interrupt', { conversation_id: this.id });
  }

  async cancelQueued(messageId) {
    try {
      await this.conn.request('cancel_queued', { conversation_id: this.id, message_id: messageId }, { retry: false });
      this.queue.remove(messageId);
    } catch (err) {
      this.toast(err.code === 'conflict' ? 'That message has already started.' : `Could not cancel: ${err.message}`, 'error');
    }
  }

  // loadQueue shows the sends queued before the page was opened, a page
  // at a time (the server bounds a page in bytes; next_offset goes on).
  async loadQueue() {
    try {
      for (let offset = 0, pages = 0; pages < 100 && !this.disposed; pages++) {
        const { queued, next_offset: next } = await this.conn.request('list_queue', { conversation_id: this.id, offset });
        for (const q of queued || []) if (!this.seen.has(q.message_id)) this.queue.add(q.message_id, q.content);
        if (!next) return;
        offset = next;
      }
    } catch { /* the live events still show what changes */ }
  }
}

export function newID() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

