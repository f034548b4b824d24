// Mermaid diagrams (docs/ARCHITECTURE.md, "Artifacts"): a ```mermaid
// block of an answer is drawn in place of its code, and in the artifact
// panel. Mermaid itself never runs in this page: its bundle
// (assets/src/mermaid.js, 4 MB, named by the page on the main script's
// data-mermaid-script) is fetched the first time a page holds a diagram
// and posted into one hidden artifact frame (GET /artifact, sandboxed: an
// opaque origin with no network, as every artifact), which renders each
// diagram and posts back its SVG text, or the parse error. The page shows
// the SVG as an <img>: an image runs no script and loads nothing. A
// diagram that does not parse stays a code block.
import { h } from './dom.js';

const FRAME = '/artifact';
const CACHE = 200; // diagrams kept rendered, by source text

// boot is the document the renderer frame writes first: it takes one
// script from its parent (the Mermaid bundle) and runs it. A script
// element built here, not HTML: the bundle's text is never parsed as
// markup.
const boot = '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><script>'
  + 'addEventListener("message", function run(e) {'
  + ' if (e.source !== parent || !e.data || typeof e.data.agentikScript !== "string") return;'
  + ' removeEventListener("message", run);'
  + ' var s = document.createElement("script"); s.textContent = e.data.agentikScript; document.head.appendChild(s);'
  + '});</script></body></html>';

const self = document.currentScript;
let frame = null; // a promise of the renderer's window
const waiting = new Map(); // request id → resolve
const done = new Map(); // source text → promise of {svg} or {error}
let seq = 0;

function renderer() {
  if (frame) return frame;
  frame = new Promise((resolve, reject) => {
    const src = self?.dataset.mermaidScript;
    if (!src) { reject(new Error('no Mermaid renderer on this page')); return; }
    const lib = fetch(src).then((r) => {
      if (!r.ok) throw new Error(`the Mermaid renderer failed to load (${r.status})`);
      return r.text();
    });
    const el = h('iframe', {
      class: 'mermaid-renderer', 'data-testid': 'mermaid-renderer', sandbox: 'allow-scripts', referrerpolicy: 'no-referrer',
      src: FRAME, title: 'Mermaid renderer', 'aria-hidden': 'true', tabindex: '-1',
    });
    addEventListener('message', (e) => {
      if (e.source !== el.contentWindow || !e.data) return;
      if (e.data.agentikMermaidReady) resolve(el.contentWindow);
      const res = e.data.agentikMermaidResult;
      if (res && waiting.has(res.id)) {
        waiting.get(res.id)(typeof res.svg === 'string' ? { svg: res.svg } : { error: String(res.error || 'the diagram did not render') });
        waiting.delete(res.id);
      }
    });
    // Once, to the page GET /artifact served (as artifacts.js).
    el.addEventListener('load', () => {
      lib.then((text) => {
        el.contentWindow.postMessage({ agentikArtifact: boot }, '*');
        el.contentWindow.postMessage({ agentikScript: text }, '*');
      }, reject);
    }, { once: true });
    document.body.append(el);
  });
  frame.catch(() => {}); // each caller handles the failure
  return frame;
}

// renderMermaid resolves to {svg} (an SVG document's text) or {error}; it
// rejects when the renderer cannot be loaded.
export function renderMermaid(text) {
  let p = done.get(text);
  if (p) return p;
  p = renderer().then((win) => new Promise((resolve) => {
    const id = ++seq;
    waiting.set(id, resolve);
    win.postMessage({ agentikMermaid: { id, text } }, '*');
  }));
  done.set(text, p);
  if (done.size > CACHE) done.delete(done.keys().next().value);
  return p;
}

// svgURL is the data: URL an <img> shows an SVG document from.
export function svgURL(svg) {
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

// drawDiagram draws a ```mermaid code block (a .code-block) above its
// code, which it hides behind a "Code" toggle; on a parse error the block
// stays code and says why in its bar.
export function drawDiagram(block, text, title) {
  block.dataset.diagram = 'pending';
  renderMermaid(text).then((res) => {
    const bar = block.querySelector('.code-bar');
    if (res.error) {
      block.dataset.diagram = 'error';
      bar?.querySelector('.code-lang')?.after(h('span', { class: 'diagram-error muted', 'data-testid': 'diagram-error', title: res.error }, 'not drawn: syntax error'));
      return;
    }
    const img = h('img', { class: 'diagram-img', alt: `Diagram: ${title}`, src: svgURL(res.svg) });
    block.querySelector('pre')?.before(h('div', { class: 'diagram', 'data-testid': 'mermaid-diagram' }, img));
    bar?.querySelector('.code-lang')?.after(h('button', {
      type: 'button', class: 'code-copy diagram-toggle', 'data-action': 'toggle-diagram', 'data-testid': 'diagram-toggle', 'aria-pressed': 'false',
    }, 'Code'));
    block.dataset.diagram = 'drawn';
  }, () => { block.dataset.diagram = 'unavailable'; });
}

// toggle shows a drawn diagram's code instead, or the diagram again.
function toggle(btn) {
  const block = btn.closest('.code-block');
  const code = block.dataset.showCode !== 'true';
  block.dataset.showCode = String(code);
  btn.setAttribute('aria-pressed', String(code));
}

document.addEventListener('click', (e) => {
  const b = e.target.closest?.('[data-action="toggle-diagram"]');
  if (b) toggle(b);
});
