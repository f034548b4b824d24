// A test MCP server with an MCP App, built with the MCP Apps SDK
// (@modelcontextprotocol/ext-apps): show_counter names the app
// ui://counter/app.html; the app's button calls add (the app's alone)
// through the host, and its other button asks for a tool the app was not
// given.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { registerAppTool, registerAppResource, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { z } from 'zod';

const require = createRequire(import.meta.url);
// The SDK's App with its dependencies, made a script that defines ExtApps.
const lib = readFileSync(require.resolve('@modelcontextprotocol/ext-apps/app-with-deps'), 'utf8')
  .replace(/export\s*\{([^}]*)\};?\s*$/, (_, list) => `const ExtApps={${list.split(',').map((p) => {
    const [local, name] = p.trim().split(/\s+as\s+/);
    return `${name || local}:${local}`;
  }).join(',')}};`);

const appCode = `
const { App } = ExtApps;
const app = new App({ name: 'counter', version: '1.0.0' });
const $ = (id) => document.getElementById(id);
app.ontoolinput = (p) => { $('input').textContent = 'input: ' + JSON.stringify(p.arguments); };
app.ontoolresult = (r) => { $('result').textContent = 'result: ' + (r.content?.[0]?.text ?? ''); };
$('add').onclick = async () => {
  $('called').textContent = 'calling';
  try {
    const r = await app.callServerTool({ name: 'add', arguments: { n: 2 } });
    $('called').textContent = 'called: ' + (r.isError ? 'error ' : '') + r.content?.[0]?.text;
  } catch (e) { $('called').textContent = 'failed: ' + e.message; }
};
$('other').onclick = async () => {
  try {
    await app.callServerTool({ name: 'not_mine', arguments: {} });
    $('other-out').textContent = 'other: allowed';
  } catch (e) { $('other-out').textContent = 'other: refused'; }
};
$('junk').onclick = () => {
  for (let i = 0; i < 200; i++) window.parent.postMessage(i % 2 ? 'junk' : { jsonrpc: '2.0', method: 'ping', id: 'f' + i }, '*');
  $('junk-out').textContent = 'junk sent';
};
$('say').onclick = async () => {
  try {
    const r = await app.sendMessage({ role: 'user', content: [{ type: 'text', text: 'hello from the app' }] });
    $('say-out').textContent = 'said: ' + (r.isError ? 'error' : 'ok');
  } catch (e) { $('say-out').textContent = 'say failed: ' + e.message; }
};
$('read').onclick = async () => {
  try {
    const r = await app.readServerResource({ uri: 'counter://note' });
    $('read-out').textContent = 'read: ' + r.contents?.[0]?.text;
  } catch (e) { $('read-out').textContent = 'read failed: ' + e.message; }
};
await app.connect();
$('status').textContent = 'connected';
`;

const html = `<!DOCTYPE html><html><head><title>Counter</title></head><body>
<p id="status">loading</p><p id="input"></p><p id="result"></p>
<button id="add">Add 2</button> <p id="called"></p>
<button id="other">Other</button> <p id="other-out"></p>
<button id="junk">Junk</button> <p id="junk-out"></p>
<button id="say">Say</button> <p id="say-out"></p>
<button id="read">Read</button> <p id="read-out"></p>
<script>
addEventListener('error', (e) => { document.getElementById('status').textContent = 'error: ' + e.message; });
addEventListener('unhandledrejection', (e) => { document.getElementById('status').textContent = 'rejected: ' + (e.reason?.message || e.reason); });
</script>
<script type="module">${lib}\n${appCode}</script>
</body></html>`;

const server = new McpServer({ name: 'counter', version: '1.0.0' });
let count = 0;
const uri = 'ui://counter/app.html';
registerAppResource(server, 'counter_app', uri, { description: 'The counter' }, async () => ({
  contents: [{ uri, mimeType: RESOURCE_MIME_TYPE, text: html, _meta: { ui: { prefersBorder: true } } }],
}));
registerAppTool(server, 'show_counter', {
  description: 'Show the counter',
  inputSchema: { label: z.string().optional() },
  _meta: { ui: { resourceUri: uri } },
}, async () => ({ content: [{ type: 'text', text: `count is ${count}` }] }));
server.registerResource('note', 'counter://note', { mimeType: 'text/plain' },
  async () => ({ contents: [{ uri: 'counter://note', mimeType: 'text/plain', text: 'a note from the counter' }] }));
// add is the app's alone (visibility ["app"]): the model is not offered
// it. reset is the model's alone: the app may not call it.
registerAppTool(server, 'add', { description: 'Add n to the counter', inputSchema: { n: z.number() }, _meta: { ui: { visibility: ['app'] } } },
  async ({ n }) => { count += n; return { content: [{ type: 'text', text: `count is ${count}` }] }; });
registerAppTool(server, 'reset', { description: 'Reset the counter', inputSchema: {}, _meta: { ui: { visibility: ['model'] } } },
  async () => { count = 0; return { content: [{ type: 'text', text: 'count is 0' }] }; });
await server.connect(new StdioServerTransport());
