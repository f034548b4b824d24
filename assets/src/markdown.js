// Markdown rendering for untrusted model and tool output: marked parses,
// DOMPurify sanitizes on every render, highlight.js colours code. Remote
// images are never loaded: they become links the user may open.
import { Marked } from 'marked';
import createDOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { h, icon } from './dom.js';
import { isImageType } from './rules.js';

const LANGS = { bash, c, css, diff, go, java, javascript, json, python, rust, sql, typescript, xml, yaml };
for (const [name, def] of Object.entries(LANGS)) hljs.registerLanguage(name, def);
hljs.registerAliases(['sh', 'shell', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['golang'], { languageName: 'go' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['rs'], { languageName: 'rust' });

const marked = new Marked({ gfm: true, breaks: false, async: false });

// Math is left exactly as written: $…$, $$…$$, \(…\) and \[…\] pass
// through as text, so markdown does not eat a backslash or read a_1 * b_1
// as emphasis. (Rendering it, e.g. with KaTeX, can build on these tokens.)
const escapeHTML = (t) => t.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const INLINE_MATH = /^(?:\$\$(?!\s)[^]+?\$\$|\$(?![\s$])(?:\\.|[^\\$\n])+?(?<!\s)\$(?!\d)|\\\((?:\\.|[^])+?\\\)|\\\[(?:\\.|[^])+?\\\])/;
const BLOCK_MATH = /^ {0,3}(\$\$|\\\[)\n?[^]+?(\$\$|\\\])[ \t]*(?:\n|$)/;
marked.use({
  extensions: [
    {
      name: 'math', level: 'block',
      start: (src) => src.match(/^ {0,3}(\$\$|\\\[)/m)?.index,
      tokenizer(src) {
        const m = BLOCK_MATH.exec(src);
        if (m && (m[1] === '$$') === (m[2] === '$$')) return { type: 'math', raw: m[0], text: m[0].trim() };
        return undefined;
      },
      renderer: (t) => `<p class="math">${escapeHTML(t.text)}</p>`,
    },
    {
      name: 'inlineMath', level: 'inline',
      start: (src) => src.match(/\$|\\[([]/)?.index,
      tokenizer(src) {
        const m = INLINE_MATH.exec(src);
        if (m) return { type: 'inlineMath', raw: m[0], text: m[0] };
        return undefined;
      },
      renderer: (t) => `<span class="math">${escapeHTML(t.text)}</span>`,
    },
  ],
});

const purify = createDOMPurify(window);
const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  // input stays for task lists: only a disabled checkbox survives (below).
  FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed', 'link', 'meta', 'base', 'svg', 'math'],
  FORBID_ATTR: ['style', 'id', 'srcset', 'action', 'formaction', 'background', 'ping'],
  ALLOW_DATA_ATTR: false,
};

// Classes only on code (its language); model HTML may not borrow ours.
purify.addHook('uponSanitizeAttribute', (node, data) => {
  if (data.attrName === 'class' && !(node.tagName === 'CODE' && /^language-[\w+#.-]+$/.test(data.attrValue))
    && !(/^(SPAN|P)$/.test(node.tagName) && data.attrValue === 'math')) {
    data.keepAttr = false;
  }
});

// A task list's box ("- [x] done") is the only input kept: a checkbox
// that cannot be changed (decorate drops any outside a list item).
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName !== 'INPUT') return;
  for (const a of [...node.attributes]) if (a.name !== 'checked') node.removeAttribute(a.name);
  node.setAttribute('type', 'checkbox');
  node.setAttribute('disabled', '');
  node.setAttribute('aria-label', node.hasAttribute('checked') ? 'Done' : 'Not done');
});

// Inline images may only be data: images; every other src is kept aside so
// the browser never fetches it. Links open in a new tab without referrer.
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
  if (node.tagName === 'IMG') {
    const src = node.getAttribute('src') || '';
    const data = /^data:([\w.+-]+\/[\w.+-]+);base64,/i.exec(src);
    if (!data || !isImageType(data[1])) {
      node.removeAttribute('src');
      if (/^https?:\/\//i.test(src)) node.setAttribute('data-remote-src', src);
    }
  }
});

function highlight(code) {
  const cls = [...code.classList].find((k) => k.startsWith('language-'));
  const lang = cls ? cls.slice('language-'.length).toLowerCase() : '';
  const text = code.textContent;
  if (lang && hljs.getLanguage(lang)) {
    // hljs escapes its input; its output is spans with classes only.
    code.innerHTML = hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
    code.classList.add('hljs');
  }
  return lang;
}

// decorate turns sanitized output into what the page shows: code blocks get
// a header with the language and a copy button, remote images a link.
function decorate(frag) {
  for (const img of frag.querySelectorAll('img[data-remote-src]')) {
    const src = img.getAttribute('data-remote-src');
    let host = '';
    try { host = new URL(src).host; } catch { host = ''; }
    const a = h('a', { class: 'remote-img', href: src, target: '_blank', rel: 'noopener noreferrer nofollow', title: src },
      icon('image'), ` ${img.getAttribute('alt') || 'Image'} `, h('span', { class: 'muted' }, `(remote image from ${host} not loaded)`));
    img.replaceWith(a);
  }
  for (const img of frag.querySelectorAll('img:not([src])')) img.remove();
  for (const box of frag.querySelectorAll('input')) {
    if (box.closest('li')) box.closest('li').classList.add('task');
    else box.remove();
  }
  for (const pre of frag.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    if (!code) continue;
    const lang = highlight(code);
    const bar = h('div', { class: 'code-bar' },
      h('span', { class: 'code-lang' }, lang || 'text'),
      h('button', { type: 'button', class: 'code-copy', 'data-action': 'copy-code', 'aria-label': 'Copy code' }, icon('copy'), h('span', null, 'Copy')));
    const wrap = h('div', { class: 'code-block' });
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
  for (const table of frag.querySelectorAll('table')) {
    const wrap = h('div', { class: 'table-wrap' });
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return frag;
}

// renderMarkdown returns a sanitized, decorated DocumentFragment for text.
export function renderMarkdown(text) {
  const html = marked.parse(text || '');
  const frag = decorate(purify.sanitize(html, PURIFY));
  const math = [...frag.querySelectorAll('.math')];
  if (math.length) typeset(math);
  return frag;
}

// The math renderer's bundle (assets/src/math.js), named by the page on
// the main script's data attributes, is loaded once, on first use; until
// it is there, math shows as written.
const self = document.currentScript;
let mathReady = null;

function loadMath() {
  if (mathReady) return mathReady;
  mathReady = new Promise((resolve, reject) => {
    const src = self?.dataset.mathScript;
    if (!src) { reject(new Error('no math renderer')); return; }
    const css = self.dataset.mathStyle;
    if (css) document.head.append(h('link', { rel: 'stylesheet', href: css }));
    const s = h('script', { src });
    s.nonce = self.nonce; // the page's CSP allows scripts with its nonce
    s.onload = () => (window.agentikMath ? resolve(window.agentikMath) : reject(new Error('math renderer missing')));
    s.onerror = () => reject(new Error('math renderer failed to load'));
    document.head.append(s);
  });
  return mathReady;
}

// unwrap strips math's delimiters: $…$, $$…$$, \(…\), \[…\].
function unwrap(text) {
  const t = text.trim();
  for (const [open, close, display] of [['$$', '$$', true], ['\\[', '\\]', true], ['\\(', '\\)', false], ['$', '$', false]]) {
    if (t.startsWith(open) && t.endsWith(close) && t.length >= open.length + close.length) return [t.slice(open.length, t.length - close.length), display];
  }
  return [t, false];
}

function typeset(els) {
  loadMath().then((m) => {
    for (const el of els) {
      const [tex, display] = unwrap(el.textContent);
      const box = h(el.tagName === 'P' ? 'div' : 'span', { class: el.tagName === 'P' ? 'math-display' : 'math-inline', title: el.textContent });
      try {
        m.render(tex, box, display || el.tagName === 'P');
      } catch {
        continue; // shown as written
      }
      el.replaceWith(box);
    }
  }, () => {});
}


// renderInto replaces el's children with the rendered markdown of text.
export function renderInto(el, text) {
  el.replaceChildren(renderMarkdown(text));
}

// StreamRenderer renders a growing markdown text into el at a cost that
// does not grow with the text: finished top-level blocks are rendered once
// and kept; each update re-renders only the open tail. A split is made at a
// blank line outside a code fence that is followed by an unindented line,
// where a new top-level block begins. When the message is stored it is
// rendered whole (setMarkdown), so a split never shows in the end result.
export class StreamRenderer {
  constructor(el) {
    this.el = el;
    this.done = h('div', { class: 'md-part' });
    this.tail = h('div', { class: 'md-part' });
    el.replaceChildren(this.done, this.tail);
    this.frozen = 0; // text[0:frozen] is rendered in done
    this.scan = 0; // text[frozen:scan] was scanned for a split
    this.fence = false; // inside a code fence at scan
  }

  update(text) {
    // Scan whole lines not yet scanned for the last safe split point.
    let split = -1;
    let pos = this.scan;
    for (;;) {
      const nl = text.indexOf('\n', pos);
      if (nl < 0) break;
      const line = text.slice(pos, nl);
      if (/^ {0,3}(```|~~~)/.test(line)) this.fence = !this.fence;
      const next = nl + 1;
      // A blank line, then a complete next line starting at column 0.
      if (!this.fence && line.trim() === '' && next < text.length) {
        const after = text.indexOf('\n', next);
        if (after >= 0 && /^\S/.test(text.slice(next, after)) && !/^(```|~~~)/.test(text.slice(next, after))) {
          split = next;
        }
      }
      pos = next;
    }
    this.scan = pos;
    if (split > this.frozen) {
      this.done.append(renderMarkdown(text.slice(this.frozen, split)));
      this.frozen = split;
    }
    this.tail.replaceChildren(renderMarkdown(text.slice(this.frozen)));
  }
}
