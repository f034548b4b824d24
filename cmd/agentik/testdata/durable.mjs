// The MCP SDK's client, the AI SDK's DefaultChatTransport and AG-UI's
// HttpAgent across a kill -9 of agentik mid-answer. Run by
// durable_test.go with AGENTIK_URL, AGENTIK_KEY, HELD (the text the model
// streams before it holds) and PHASE: "continued" (one ask_agentik call;
// the restart continues its turn) or "failed" (a call and a chat; the
// restart does not continue them). Prints {"streaming":true} once every
// client saw HELD, waits for a line on stdin (the binary was killed and
// started again), then prints what each client saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { DefaultChatTransport } from "ai";
import { HttpAgent } from "@ag-ui/client";
import readline from "node:readline";

const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const held = process.env.HELD;
const phase = process.env.PHASE;
const headers = { Authorization: "Bearer " + key };
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const out = {};

// The MCP call, with progress: it streams the answer, the binary dies,
// and the client reconnects with its Last-Event-ID (a restart takes
// longer than the SDK's default two retries in a second and a half).
const client = new Client({ name: "agentik-durable", version: "1.0.0" });
const errors = [];
client.onerror = (e) => errors.push(String(e));
await client.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp"), {
  requestInit: { headers },
  reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 100 },
}));
const progress = [];
let mcpSaw;
const mcpStreaming = new Promise((resolve) => (mcpSaw = resolve));
const started = Date.now();
const call = client
  .callTool({ name: "ask_agentik", arguments: { message: "talk" } }, undefined, {
    timeout: 30000,
    onprogress: (p) => {
      progress.push(p.message ?? "");
      if (progress.join("") === held) mcpSaw();
    },
  })
  .then((r) => ({ text: r.content.filter((c) => c.type === "text").map((c) => c.text).join(""), isError: !!r.isError, structured: r.structuredContent }))
  .catch((e) => ({ thrown: String(e) }));

// The AI SDK chat: its stream dies with the binary.
const chatId = "durable-chat";
const transport = new DefaultChatTransport({ api: base + "/agentik/ai-sdk/chat", headers });
let chatSaw = "";
if (phase === "failed") {
  const stream = await transport.sendMessages({ chatId, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "talk" }] }], trigger: "submit-message", abortSignal: undefined });
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (value.type === "text-delta") chatSaw += value.delta;
    if (chatSaw === held) break;
  }
  reader.read().catch(() => {}); // until the kill
}
await mcpStreaming;
console.log(JSON.stringify({ streaming: true }));
await lines.next(); // killed and started again
const restarted = Date.now();

out.mcp = await call;
out.mcp.progress = progress.join("");
out.mcp.after_restart_ms = Date.now() - restarted;
out.mcp.errors = errors.length;

if (phase === "failed") {
  // reconnectToStream as useChat({resume: true}) calls it.
  const resumed = await transport.reconnectToStream({ chatId });
  out.resumed = resumed && { types: [], text: "", error: null };
  if (resumed) {
    const reader = resumed.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out.resumed.types.push(value.type);
      if (value.type === "text-delta") out.resumed.text += value.delta;
      if (value.type === "error") out.resumed.error = value.errorText;
    }
  }
  // AG-UI: a run without new input on the same thread.
  const agent = new HttpAgent({ url: base + "/agentik/ag-ui", headers, threadId: chatId });
  const seen = { types: [], error: null, outcome: null };
  try {
    await agent.runAgent({}, {
      onEvent({ event }) { seen.types.push(event.type); },
      onRunErrorEvent({ event }) { seen.error = { message: event.message, code: event.code }; },
      onRunFinishedEvent(e) { seen.outcome = e.outcome ?? "success"; },
    });
  } catch (e) {
    seen.thrown = String(e?.message ?? e);
  }
  out.agui = seen;
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(0);
