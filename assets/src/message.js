// Rendering of persisted messages and live parts. The markup is not
// written here: web/template.templ renders each kind of message with the
// same templ component as the first paint, into <template> elements that
// this module clones and fills. A message looks the same whether the
// server rendered it or it arrived live, and changing its markup is one
// edit, in templ.
import { prettyJSON } from './dom.js';
import { renderInto } from './markdown.js';
import { markArtifacts } from './artifacts.js';
import { citationPlace, errorDetail, errorText, formatUsage, isImageType, retries } from './rules.js';

// Raw markdown of rendered bodies, for copy buttons.
export const rawText = new WeakMap();

// setMarkdown renders text into a .md element and remembers the source.
export function setMarkdown(el, text) {
  rawText.set(el, text);
  renderInto(el, text);
  markArtifacts(el, text); // an HTML, SVG, Mermaid or Markdown document opens beside the chat
  el.classList.remove('md-raw');
}

// upgradeMarkdown renders a server-rendered .md-raw element (plain text on
// first paint) as markdown.
export function upgradeMarkdown(el) {
  setMarkdown(el, el.textContent);
}

// clone returns a copy of the first element of template #id.
export function clone(id) {
  return document.getElementById(id).content.firstElementChild.cloneNode(true);
}

// setAttrs sets attributes; null, undefined, '' and false remove them.
export function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === '' || v === false) el.removeAttribute(k);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

// fill sets the text of the element matching sel in el, or removes that
// element when text is empty.
function fill(el, sel, text) {
  const x = el.querySelector(sel);
  if (!x) return null;
  if (text) x.textContent = text;
  else x.remove();
  return text ? x : null;
}

function textOf(content) {
  return (content || []).filter((c) => c.type === 'text').map((c) => c.body).join('\n\n');
}

// fillImages repeats the template's image for each inline image of content.
function fillImages(el, content) {
  const box = el.querySelector('.msg-images');
  if (!box) return;
  const proto = box.querySelector('img');
  const imgs = (content || []).filter((c) => c.type === 'image' && isImageType(c.mime)).map((c) => {
    const img = proto.cloneNode(false);
    img.src = `data:${c.mime};base64,${c.data}`;
    return img;
  });
  if (imgs.length) box.replaceChildren(...imgs);
  else box.remove();
}

// fillResources repeats the template's resource chip for each resource
// part of content (a reference to a tool server's resource).
function fillResources(el, content) {
  const box = el.querySelector('.msg-resources');
  if (!box) return;
  const proto = box.querySelector('.resource-chip');
  const chips = (content || []).filter((c) => c.type === 'resource').map((c) => {
    const chip = proto.cloneNode(true);
    setAttrs(chip, { 'data-server': c.server, 'data-resource': c.uri, title: `${c.server}: ${c.uri} (show it as it is now)` });
    chip.querySelector('.resource-name').textContent = c.name || c.uri;
    return chip;
  });
  if (chips.length) box.replaceChildren(...chips);
  else box.remove();
}

// fillToolResources repeats the template's resource of a tool card for
// each resource the tool returned (a link, or an embedded resource): a
// chip that shows it and a button that attaches it to the next message.
function fillToolResources(el, resources) {
  const box = el.querySelector('.tool-resources');
  if (!box) return;
  const proto = box.querySelector('.tool-resource');
  const items = (resources || []).map((r) => {
    const item = proto.cloneNode(true);
    const name = r.name || r.uri;
    const chip = item.querySelector('.resource-chip');
    setAttrs(chip, { 'data-server': r.server, 'data-resource': r.uri, title: `${r.server}: ${r.uri}${r.mime ? ` (${r.mime})` : ''}` });
    chip.querySelector('.resource-name').textContent = name;
    setAttrs(item.querySelector('.resource-attach'), { 'data-server': r.server, 'data-resource': r.uri, 'data-name': name, 'aria-label': `Attach ${name} to the message` });
    return item;
  });
  if (items.length) box.replaceChildren(...items);
  else box.remove();
}

function head(el, m) {
  setAttrs(el, { 'data-id': m.id, 'data-seq': m.seq, 'data-client-id': m.client_id });
  return el;
}

// userMessage renders a user_message (or a pending one, before its echo).
export function userMessage(m, { pending = false } = {}) {
  const el = head(clone('tpl-user'), m);
  if (pending) el.classList.add('pending');
  fillImages(el, m.content);
  fill(el, '.user-text', textOf(m.content));
  fillResources(el, m.content);
  fillFiles(el, m.content);
  // An admin's message in another user's chat (web.MessageView.SentBy).
  const by = el.querySelector('.msg-sent-by');
  if (m.sent_by) by.querySelector('.sent-by-name').textContent = m.sent_by_name || m.sent_by;
  else by?.remove();
  return el;
}

// fillFiles repeats the template's file chip for each file part of
// content (a file the message attached): it opens the file's bytes.
function fillFiles(el, content) {
  const box = el.querySelector('.msg-files');
  if (!box) return;
  const proto = box.querySelector('.file-chip');
  const chips = (content || []).filter((c) => c.type === 'file' && c.file_id).map((c) => {
    const chip = proto.cloneNode(true);
    setAttrs(chip, { 'data-file-id': c.file_id, href: `/agentik/files/${encodeURIComponent(c.file_id)}/content`, title: `${c.name} (${c.mime || ''})` });
    chip.querySelector('.resource-name').textContent = c.name || c.file_id;
    return chip;
  });
  if (chips.length) box.replaceChildren(...chips);
  else box.remove();
}

// reasoningEl is a message's (folded) reasoning.
export function reasoningEl(text, open) {
  const d = clone('tpl-assistant').querySelector('.reasoning');
  d.querySelector('.reasoning-body').textContent = text;
  d.open = !!open;
  return d;
}

// usageEl shows a turn's token usage.
export function usageEl(u) {
  const el = clone('tpl-assistant').querySelector('.usage');
  el.textContent = formatUsage(u);
  return el;
}

// fillCitations makes the answer's source chips (web/message.templ
// citations) from its citations, or removes their row.
function fillCitations(el, cs) {
  const box = el.querySelector('.citations');
  if (!box) return;
  const tpl = box.querySelector('.citation');
  if (!cs || !cs.length || !tpl) { box.remove(); return; }
  box.replaceChildren(...cs.map((c, i) => {
    const d = tpl.cloneNode(true);
    d.dataset.fileId = c.file_id || '';
    const place = citationPlace(c);
    d.querySelector('.cite-chip').title = `Source ${i + 1}: ${c.file_name || ''}${place}`;
    d.querySelector('.cite-n').textContent = String(i + 1);
    d.querySelector('.cite-file').textContent = c.file_name || '';
    d.querySelector('.cite-place').textContent = place;
    d.querySelector('.cite-text').textContent = c.text || '';
    return d;
  }));
}

// assistantMessage renders a persisted assistant_message.
export function assistantMessage(m) {
  const el = head(clone('tpl-assistant'), m);
  fill(el, '.reasoning-body', m.reasoning);
  if (!m.reasoning) el.querySelector('.reasoning')?.remove();
  setMarkdown(el.querySelector('.md'), textOf(m.content));
  fillImages(el, m.content);
  if (!m.interrupted) el.querySelector('[data-testid="interrupted"]')?.remove();
  fill(el, '.usage', formatUsage(m.usage));
  fill(el, '.msg-model', m.model);
  fillCitations(el, m.citations);
  const who = el.querySelector('.msg-agent');
  if (who) {
    if (m.agent && m.agent !== 'agentik') { who.dataset.agent = m.agent; who.textContent = agentName(m.agent); } else who.remove();
  }
  return el;
}

// agentName names an agent by its slug; app.js sets it once agents load.
let agentName = (slug) => slug;
export function setAgentNames(fn) { agentName = fn; }
// nameOfAgent is an agent's name, as the agents list has it.
export function nameOfAgent(slug) { return agentName(slug); }

// streamingAnswer is the live part of an answer being written: an answer
// without reasoning, images or meta yet.
export function streamingAnswer() {
  const el = clone('tpl-assistant');
  setAttrs(el, { 'data-type': null, 'data-id': null, 'data-seq': null, 'data-testid': 'streaming', 'aria-busy': 'true' });
  el.classList.add('streaming');
  for (const x of el.querySelectorAll('.reasoning, .msg-images, .msg-meta, .citations')) x.remove();
  el.querySelector('.md').replaceChildren();
  el.querySelector('.md').classList.remove('md-raw');
  return el;
}

// toolCard renders a tool call; result is filled in by setToolResult.
export function toolCard({ id, seq, callId, name, args }) {
  const el = clone('tpl-tool-running');
  setAttrs(el, { 'data-id': id, 'data-seq': seq, 'data-call-id': callId });
  el.querySelector('.tool-name').textContent = name;
  el.querySelector('[data-testid="tool-arguments"] code').textContent = prettyJSON(args);
  return el;
}

// setToolResult fills the result (or error) into a tool card, from the
// template of a finished card.
export function setToolResult(card, { id, result, isError, images, resources }) {
  if (id) card.setAttribute('data-result-id', id);
  const done = clone(isError ? 'tpl-tool-error' : 'tpl-tool-done');
  card.setAttribute('data-state', done.dataset.state);
  const d = card.querySelector('.tool-details');
  d.querySelector('.tool-status').replaceWith(done.querySelector('.tool-status'));
  const sec = done.querySelector('.tool-result');
  sec.querySelector('code').textContent = prettyJSON(result);
  fillImages(sec, images); // the images the tool returned
  fillToolResources(sec, resources); // and the resources
  d.querySelector('.tool-progress')?.remove();
  const old = d.querySelector('.tool-result');
  if (old) old.replaceWith(sec);
  else d.append(sec);
  if (isError) d.open = true;
}

// errorMessage renders an error message or a live error event.
export function errorMessage(m) {
  const el = head(clone('tpl-error'), m);
  el.querySelector('.err-summary').textContent = errorText(m.code, m.message);
  fill(el, '.err-detail', errorDetail(m.message));
  fill(el, '.err-code', m.code);
  if (!el.querySelector('.err-detail, .err-code')) el.querySelector('.err-details')?.remove();
  if (!retries(m.code)) el.querySelector('.err-actions')?.remove();
  return el;
}

// unknownMessage keeps forward compatibility: a type this version does not
// know is shown as a quiet note instead of breaking the view.
export function unknownMessage(m) {
  const el = head(clone('tpl-note'), m);
  el.setAttribute('data-type', m.type);
  el.querySelector('.note-type').textContent = m.type;
  return el;
}
