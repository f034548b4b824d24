// The display rules, as the server hands them to the page (web/rules.go
// owns them; the templ components apply the same ones on first paint).
function readRules() {
  try {
    return JSON.parse(document.getElementById('boot').textContent).rules || {};
  } catch {
    return {};
  }
}

const rules = readRules();
const imageTypes = new Set(rules.image_types || []);
const errorTexts = rules.error_texts || {};

// UNTITLED is what a conversation without a title is called (web.Untitled).
export const UNTITLED = rules.untitled || '';

// isImageType reports whether an image of this MIME type is shown inline
// and may be attached.
export function isImageType(mime) {
  return imageTypes.has(String(mime || '').toLowerCase());
}

// formatUsage renders token usage in the server's words, numbers grouped
// by thousands ("1,234 tokens · 1,000 in · 234 out").
export function formatUsage(u) {
  if (!u) return '';
  const n = (x) => Number(x || 0).toLocaleString('en-US');
  const values = { total: u.total_tokens, prompt: u.prompt_tokens, completion: u.completion_tokens };
  return String(rules.usage_format || '').replace(/\{(total|prompt|completion)\}/g, (_, k) => n(values[k]));
}

// errorText is what an error message with this code and message shows:
// the text of its code, or the first line of its message, which says
// what went wrong in words (docs/PROTOCOL.md "Error messages").
export function errorText(code, message) {
  if (code && errorTexts[code] !== undefined) return errorTexts[code];
  return String(message || '').split('\n')[0] || errorTexts[''] || 'Something went wrong.';
}

// errorDetail is the rest of the message: the detail behind "Details".
export function errorDetail(message) {
  const m = String(message || '');
  const i = m.indexOf('\n');
  return i < 0 ? '' : m.slice(i + 1).trim();
}

// citationPlace is where in its file a cited passage is, after the file's
// name (web.CitationPlace): " · p. 3", " · Heading", or "".
export function citationPlace(c) {
  if (c.page > 0) return ` · ${String(rules.page_format || '{page}').replace('{page}', String(c.page))}`;
  if (c.heading) return ` · ${c.heading}`;
  return '';
}
