// The math renderer, a bundle of its own (dist/math.js, with math.css and
// KaTeX's fonts): markdown.js loads it the first time a message holds math,
// so pages without math never download it. katex.render builds DOM nodes
// and sets their styles through the CSSOM, which the page's CSP allows
// (inline style attributes in HTML would be refused); trust stays off, so
// \href, \url and friends render as text.
import katex from 'katex';

window.agentikMath = {
  render(tex, el, display) {
    katex.render(tex, el, { displayMode: display, throwOnError: false, output: 'htmlAndMathml', trust: false, strict: 'ignore' });
  },
};
