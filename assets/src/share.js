// A share link's page (/s/{token}, web/share.templ): the server renders
// the transcript read-only; this script only renders the answers'
// markdown as the chat does (sanitized: nothing of the content runs) and
// wires the copy buttons, and shows the MCP Apps of the cards the server
// marked (mcpapps.js's SharedApps: no tool calls). No socket: an
// anonymous reader has no session.
import { upgradeMarkdown, rawText } from './message.js';
import { copyText } from './dom.js';
import { SharedApps } from './mcpapps.js';

for (const el of document.querySelectorAll('.md-raw')) upgradeMarkdown(el);
document.addEventListener('click', (e) => {
  const a = e.target.closest('[data-action]');
  if (a?.dataset.action === 'copy-code') copyText(a.closest('.code-block').querySelector('pre').textContent);
  if (a?.dataset.action === 'copy-message') {
    const msg = a.closest('.msg');
    const md = msg.querySelector('.msg-body .md');
    copyText((md && (rawText.get(md) ?? md.textContent)) || msg.querySelector('.msg-body')?.textContent || '');
  }
});
new SharedApps();
document.body.dataset.ready = 'true';
