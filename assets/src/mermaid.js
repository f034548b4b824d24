// The Mermaid renderer, a bundle of its own (dist/mermaid.js) that never
// runs in the app's page: diagram.js posts it into a sandboxed artifact
// frame (GET /artifact: an opaque origin, no network), where it renders
// the diagrams the page sends and posts each back as SVG text, or the
// parse error. Diagrams are rendered one at a time (Mermaid keeps state
// per render) with securityLevel 'strict' (no click handlers, labels
// sanitized); the page shows the SVG as an image, which runs nothing.
import mermaid from 'mermaid';

let queue = Promise.resolve();
let n = 0;

// size gives the SVG the width and height of its viewBox: as an <img> it
// has no container to fill (Mermaid writes width="100%").
function size(svg) {
  const doc = new DOMParser().parseFromString(svg, 'text/html');
  const el = doc.querySelector('svg');
  if (!el) throw new Error('Mermaid returned no SVG');
  const box = (el.getAttribute('viewBox') || '').split(/[\s,]+/).map(Number);
  if (box.length === 4 && box[2] > 0 && box[3] > 0) {
    el.setAttribute('width', String(Math.ceil(box[2])));
    el.setAttribute('height', String(Math.ceil(box[3])));
    el.style.removeProperty('max-width');
  }
  // XML, not HTML: an image/svg+xml document must be well-formed.
  return new XMLSerializer().serializeToString(el);
}

async function render({ id, text }) {
  // dagre, not Mermaid 12's default ELK, which is not bundled (build.mjs).
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'default', layout: 'dagre', fontFamily: 'system-ui, sans-serif', suppressErrorRendering: true });
  try {
    const { svg } = await mermaid.render(`agentik-mermaid-${++n}`, text);
    return { id, svg: size(svg) };
  } catch (err) {
    return { id, error: String(err?.message || err).slice(0, 500) };
  }
}

addEventListener('message', (e) => {
  const req = e.data?.agentikMermaid;
  if (e.source !== parent || !req || typeof req.text !== 'string') return;
  queue = queue.then(() => render(req)).then((res) => parent.postMessage({ agentikMermaidResult: res }, '*'));
});
parent.postMessage({ agentikMermaidReady: true }, '*');
