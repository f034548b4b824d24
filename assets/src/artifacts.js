// Artifacts: an answer's HTML, SVG, Mermaid or Markdown document opens in
// a side panel beside the chat (docs/ARCHITECTURE.md, "Artifacts").
//
// What is an artifact: a fenced code block whose language is html, svg,
// mermaid or markdown (md), and an answer that is itself a long Markdown
// document (LONG_DOC). Its title is the fence's title="…" (```html
// title="Chart"), else the document's <title> (HTML, SVG) or first heading
// (Markdown), else its first line. The artifacts of one kind and title in
// the conversation, in order, are the versions of one artifact: the panel
// offers the later ones and the earlier ones with a picker.
//
// Where it runs: in an iframe with sandbox="allow-scripts" and without
// allow-same-origin (an opaque origin: no cookies, no storage, no access to
// this page), loaded from GET /artifact, whose response carries the CSP that
// forbids every fetch (connect-src 'none') and every load but inline script,
// inline style and data: images. The content reaches it by postMessage; the
// frame writes it into its own document. (A srcdoc frame would inherit this
// page's CSP, whose script nonce blocks the artifact's own scripts.)
//
// Mermaid is drawn by diagram.js (in a sandboxed frame of its own, shown
// as an image): in the answer in place of its code, and here as an SVG.
import { Lexer, walkTokens } from 'marked';
import { drawDiagram, renderMermaid } from './diagram.js';
import { copyText, h, icon } from './dom.js';
import { renderMarkdown } from './markdown.js';

// LONG_DOC: an answer of at least this many characters with at least this
// many headings is a document, offered as a Markdown artifact as a whole.
export const LONG_DOC = { chars: 2000, headings: 3 };

const FRAME = '/artifact';
const KINDS = { html: 'html', htm: 'html', svg: 'svg', mermaid: 'mermaid', markdown: 'markdown', md: 'markdown' };
const EXT = { html: 'html', svg: 'svg', mermaid: 'mmd', markdown: 'md' };
const MIME = { html: 'text/html', svg: 'image/svg+xml', mermaid: 'text/plain', markdown: 'text/markdown' };
const LABEL = { html: 'HTML', svg: 'SVG', mermaid: 'Mermaid', markdown: 'Markdown' };
const STORE = 'agentik.artifact:'; // + location.pathname → {msg, n}

// source is the text of each artifact element (a .code-block or a .md).
const source = new WeakMap();

// titleOf names an artifact of kind from its fence's info string and text.
function titleOf(kind, info, text) {
  const attr = /\btitle=(?:"([^"]*)"|'([^']*)'|(\S+))/.exec(info || '');
  let t = attr ? (attr[1] ?? attr[2] ?? attr[3]) : '';
  if (!t && (kind === 'html' || kind === 'svg')) t = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1] || '';
  if (!t && kind === 'markdown') t = /^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/m.exec(text)?.[1] || '';
  if (!t) t = (text.split('\n').find((l) => l.trim()) || '').trim();
  t = t.replace(/\s+/g, ' ').trim();
  return t.length > 80 ? `${t.slice(0, 79)}…` : t || 'Untitled';
}

// kindOf is the artifact kind of a fence's info string and text, or ''.
function kindOf(info, text) {
  const lang = (info || '').trim().split(/\s+/)[0].toLowerCase();
  if (lang === 'xml' && /^\s*(<\?xml[^>]*>\s*)?<svg[\s>]/i.test(text)) return 'svg';
  return KINDS[lang] || '';
}

// markArtifacts gives the artifacts of a rendered answer (el, the .md
// rendered from text) an Open button. It is called each time an answer's
// markdown is rendered whole (message.js setMarkdown).
export function markArtifacts(el, text) {
  const fences = [];
  try {
    walkTokens(Lexer.lex(text || '', { gfm: true }), (t) => {
      if (t.type === 'code' && t.codeBlockStyle !== 'indented') fences.push(t);
    });
  } catch {
    return;
  }
  let n = 0;
  for (const code of el.querySelectorAll('.code-block pre > code')) {
    const body = code.textContent.replace(/\n$/, '');
    const i = fences.findIndex((f) => f.text === body);
    if (i < 0) continue;
    const [f] = fences.splice(0, i + 1).slice(-1);
    const kind = kindOf(f.lang, f.text);
    if (!kind) continue;
    const block = code.closest('.code-block');
    const title = titleOf(kind, f.lang, f.text);
    mark(block, kind, title, n++, f.text);
    const bar = block.querySelector('.code-bar');
    bar?.insertBefore(openButton(kind), bar.querySelector('.code-copy'));
    if (kind === 'mermaid') drawDiagram(block, f.text, title);
  }
  const headings = (text.match(/^ {0,3}#{1,6}[ \t]+\S/gm) || []).length;
  if (text.length >= LONG_DOC.chars && headings >= LONG_DOC.headings) {
    mark(el, 'markdown', titleOf('markdown', '', text), 'doc', text);
    el.prepend(h('div', { class: 'artifact-doc-bar' }, openButton('markdown', 'Open as document')));
  }
  if (restoring) queueMicrotask(restore);
  if (current) queueMicrotask(() => panel?.refresh());
}

function mark(el, kind, title, n, text) {
  el.dataset.artifactKind = kind;
  el.dataset.artifactTitle = title;
  el.dataset.artifactN = String(n);
  source.set(el, text);
}

function openButton(kind, label = 'Open') {
  return h('button', { type: 'button', class: 'code-copy artifact-open', 'data-action': 'open-artifact', 'data-testid': 'artifact-open', 'aria-label': `Open the ${LABEL[kind]} in the side panel` },
    icon('file'), h('span', null, label));
}

// all lists the page's artifacts in conversation order (the chat's
// #messages, or any page that renders answers with setMarkdown).
function all() {
  return [...document.querySelectorAll('[data-artifact-kind]')].filter((el) => source.has(el));
}

function keyOf(el) {
  return { msg: el.closest('[data-id]')?.dataset.id || '', n: el.dataset.artifactN };
}

function find(key) {
  return all().find((el) => { const k = keyOf(el); return k.msg === key.msg && k.n === key.n; });
}

// versions are the artifacts of el's kind and title, el's among them.
function versions(el) {
  const { artifactKind: kind, artifactTitle: title } = el.dataset;
  return all().filter((x) => x.dataset.artifactKind === kind && x.dataset.artifactTitle === title);
}

// frameDocument is the HTML document the frame shows for an artifact.
function frameDocument(kind, text) {
  const base = '<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">';
  if (kind === 'html') return text;
  if (kind === 'svg') {
    return `${base}<style>html,body{margin:0;height:100%}body{display:flex;align-items:center;justify-content:center}svg{max-width:100%;max-height:100%}</style></head><body>${text}</body></html>`;
  }
  // Markdown: rendered (and sanitized) here, as in the chat.
  const box = h('div');
  box.append(renderMarkdown(text));
  for (const b of box.querySelectorAll('button')) b.remove();
  return `${base}<style>body{font:15px/1.6 system-ui,sans-serif;max-width:46rem;margin:0 auto;padding:16px 20px}pre{overflow:auto;padding:10px;border:1px solid #8884;border-radius:6px}code{font-family:ui-monospace,monospace}table{border-collapse:collapse}td,th{border:1px solid #8886;padding:4px 8px}img{max-width:100%}.code-bar{font-size:12px;opacity:.7}</style></head><body>${box.innerHTML}</body></html>`;
}

function filename(title, kind) {
  const stem = title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'artifact';
  return `${stem}.${EXT[kind]}`;
}

// Panel is the side panel: one artifact at a time, its versions, Copy,
// Download and Close.
class Panel {
  constructor() {
    this.el = h('aside', { class: 'artifact-panel', id: 'artifact-panel', 'data-testid': 'artifact-panel', 'aria-label': 'Artifact', hidden: true });
    this.kind = h('span', { class: 'artifact-kind badge' });
    this.title = h('h2', { class: 'artifact-title', 'data-testid': 'artifact-title' });
    this.picker = h('select', { class: 'artifact-version', 'data-testid': 'artifact-version', 'aria-label': 'Version' });
    const btn = (action, label, name, text) => h('button', { type: 'button', class: 'code-copy', 'data-testid': `artifact-${action}`, 'aria-label': label, title: label }, icon(name), text ? h('span', null, text) : null);
    this.copyBtn = btn('copy', 'Copy the source', 'copy', 'Copy');
    this.downloadBtn = btn('download', 'Download', 'file', 'Download');
    this.closeBtn = btn('close', 'Close the panel', 'x');
    this.note = h('p', { class: 'artifact-note muted', 'data-testid': 'artifact-note', hidden: true });
    this.body = h('div', { class: 'artifact-body' });
    this.el.append(h('header', { class: 'artifact-head' }, this.kind, this.title, this.picker, this.copyBtn, this.downloadBtn, this.closeBtn), this.note, this.body);
    this.picker.addEventListener('change', () => {
      const v = this.list[Number(this.picker.value)];
      if (v) this.show(v);
    });
    this.copyBtn.addEventListener('click', async () => {
      const ok = await copyText(source.get(current) || '');
      this.copyBtn.querySelector('span').textContent = ok ? 'Copied' : 'Copy failed';
      setTimeout(() => { this.copyBtn.querySelector('span').textContent = 'Copy'; }, 1500);
    });
    this.downloadBtn.addEventListener('click', () => this.download());
    this.closeBtn.addEventListener('click', () => close(true));
    (document.getElementById('app') || document.body).append(this.el);
  }

  // show renders artifact el (a .code-block or .md) in the panel.
  show(el) {
    current = el;
    const kind = el.dataset.artifactKind;
    const text = source.get(el);
    this.kind.textContent = LABEL[kind];
    this.title.textContent = el.dataset.artifactTitle;
    this.refresh();
    this.note.hidden = true;
    delete this.el.dataset.diagram;
    if (kind === 'mermaid') {
      // Drawn as an SVG artifact; until then, and if it does not parse, as
      // its source.
      this.body.replaceChildren(h('pre', { class: 'artifact-source', 'data-testid': 'artifact-source' }, h('code', null, text)));
      renderMermaid(text).then((res) => {
        if (current !== el) return;
        if (res.svg) {
          this.frame('svg', res.svg, el.dataset.artifactTitle);
          this.el.dataset.diagram = 'drawn';
        } else {
          this.note.textContent = `This diagram is shown as its source: Mermaid could not draw it (${res.error}).`;
          this.note.hidden = false;
          this.el.dataset.diagram = 'error';
        }
      }, (err) => {
        if (current !== el) return;
        this.note.textContent = `This diagram is shown as its source: ${err.message}.`;
        this.note.hidden = false;
      });
    } else {
      this.frame(kind, text, el.dataset.artifactTitle);
    }
    this.el.hidden = false;
    document.body.dataset.artifact = 'open';
    try { sessionStorage.setItem(STORE + location.pathname, JSON.stringify(keyOf(el))); } catch { /* storage off */ }
  }

  // frame shows a document of kind in a sandboxed frame.
  frame(kind, text, title) {
    const frame = h('iframe', {
      class: 'artifact-frame', 'data-testid': 'artifact-frame', title,
      sandbox: 'allow-scripts', referrerpolicy: 'no-referrer', src: FRAME,
    });
    // Once, to the page GET /artifact served: if the artifact navigates
    // its frame elsewhere, nothing is sent there.
    frame.addEventListener('load', () => frame.contentWindow?.postMessage({ agentikArtifact: frameDocument(kind, text) }, '*'), { once: true });
    this.body.replaceChildren(frame);
  }

  // refresh rebuilds the version picker (new versions arrive with answers).
  refresh() {
    if (!current) return;
    if (!current.isConnected) { close(false); return; }
    this.list = versions(current);
    const i = this.list.indexOf(current);
    this.picker.replaceChildren(...this.list.map((_, j) => h('option', { value: String(j) }, `Version ${j + 1} of ${this.list.length}`)));
    this.picker.value = String(i);
    this.picker.disabled = this.list.length < 2;
    this.el.dataset.version = `${i + 1}/${this.list.length}`;
  }

  download() {
    if (!current) return;
    const kind = current.dataset.artifactKind;
    const url = URL.createObjectURL(new Blob([source.get(current) || ''], { type: `${MIME[kind]};charset=utf-8` }));
    const a = h('a', { href: url, download: filename(current.dataset.artifactTitle, kind), hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
}

let panel = null; // created on first open
let current = null; // the artifact element shown
let restoring = null; // {msg, n} to open once its answer is on the page

export function openArtifact(el) {
  if (!panel) panel = new Panel();
  restoring = null;
  panel.show(el);
}

// close hides the panel; forget drops the remembered artifact (the user
// closed it, rather than left the conversation).
function close(forget) {
  current = null;
  if (panel) {
    panel.el.hidden = true;
    panel.body.replaceChildren();
  }
  delete document.body.dataset.artifact;
  if (forget) try { sessionStorage.removeItem(STORE + location.pathname); } catch { /* storage off */ }
}

// restore re-opens the artifact that was open on this page before a
// reload (or a visit to another conversation), once it is rendered.
function restore() {
  if (!restoring) return;
  const el = find(restoring);
  if (el) openArtifact(el);
}

function remembered() {
  try { return JSON.parse(sessionStorage.getItem(STORE + location.pathname) || 'null'); } catch { return null; }
}

function init() {
  document.addEventListener('click', (e) => {
    const b = e.target.closest?.('[data-action="open-artifact"]');
    if (!b) return;
    const el = b.closest('[data-artifact-kind]');
    if (el && source.has(el)) openArtifact(el);
  });
  restoring = remembered();
  restore();
  // The app swaps #main to show another conversation: the panel follows.
  const app = document.getElementById('app');
  if (app) {
    new MutationObserver(() => {
      if (current && !current.isConnected) close(false);
      if (!current) { restoring = remembered(); restore(); }
    }).observe(app, { childList: true });
  }
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init, { once: true });
else init();
