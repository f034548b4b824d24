// The display rules, as the server hands them to the page (web/rules.go
// owns them; the templ components apply the same ones on first paint).
import { dateLocale } from './locale.js';

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
// what went wrong in words (docs/PROTOCOL.md "Error messages"), its
// instants in the reader's time.
export function errorText(code, message) {
  if (code && errorTexts[code] !== undefined) return errorTexts[code];
  return localInstants(String(message || '').split('\n')[0]) || errorTexts[''] || 'Something went wrong.';
}

// budgetLowPercent is the share of a budget under which the composer
// shows what is left (web.BudgetLowPercent).
export function budgetLowPercent() {
  return Number(rules.budget_low_percent || 0);
}

// retries reports whether an error of code offers Retry (web.Rules
// NoRetry: a used-up budget does not).
export function retries(code) {
  return !(rules.no_retry || []).includes(code);
}

// localInstants writes the UTC instants of a server's message (RFC 3339,
// "2026-12-07T00:00:00Z") in the reader's time zone and words.
export function localInstants(text) {
  const fmt = new Intl.DateTimeFormat(dateLocale(), { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });
  return String(text).replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b/g, (iso) => {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? iso : fmt.format(d);
  });
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
