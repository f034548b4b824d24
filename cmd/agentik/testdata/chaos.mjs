// Six protocols' own clients on one long answer each, through kill -9s of
// agentik: the OpenAI SDK on Responses (starting_after) and on chat
// completions (the same request again with its Idempotency-Key), A2A
// (@a2a-js/sdk, resubscribeTask), MCP (the TypeScript SDK's reconnect with
// Last-Event-ID), the AI SDK (DefaultChatTransport.reconnectToStream) and
// AG-UI (HttpAgent, a run without input). Run by chaos_test.go with
// AGENTIK_URL (a proxy to the live instance), AGENTIK_KEY and TARGETS (a
// JSON array: the text each client must have seen at each kill, then the
// whole answer). Each client resumes by itself, as often as its stream
// breaks. A line "want N" on stdin is answered {"saw":N} once every client
// saw TARGETS[N] (for the last, once every client finished), then, after
// the last, one JSON object of what each client saw.
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { DefaultChatTransport } from "ai";
import { HttpAgent } from "@ag-ui/client";
import readline from "node:readline";

const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const targets = JSON.parse(process.env.TARGETS);
const whole = targets[targets.length - 1];
const headers = { Authorization: "Bearer " + key };
// A library's own promise that rejects when the server dies under it
// (fetch's "terminated") is not the test's failure: the client resumes.
const unhandled = [];
process.on("unhandledRejection", (e) => unhandled.length < 20 && unhandled.push(errText(e) + " " + String(e?.stack ?? "").split("\n").slice(1, 6).join(" | ")));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errText = (e) => String(e?.message ?? e).slice(0, 200);

// Each client's state: text is what it shows now, done once its turn ended.
const clients = {};
function client(name) {
  clients[name] = { text: "", done: false, attempts: 0, errors: [], anomalies: [] };
  return clients[name];
}

// resilient runs first, then again after every break, until done.
async function resilient(s, first, again) {
  for (let fn = first; !s.done; fn = again) {
    s.attempts++;
    try {
      await fn();
    } catch (e) {
      if (s.errors.length < 20) s.errors.push(errText(e));
    }
    if (!s.done) await sleep(100);
  }
}

// OpenAI Responses: one stored streamed response, resumed after its last
// sequence number.
const openai = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
const resp = client("responses");
resp.seqs = [];
async function readResponse(stream) {
  for await (const ev of stream) {
    resp.seqs.push(ev.sequence_number);
    if (ev.type === "response.created") resp.id = ev.response.id;
    if (ev.type === "response.output_text.delta") resp.text += ev.delta;
    if (["response.completed", "response.failed", "response.incomplete"].includes(ev.type)) {
      resp.status = ev.response.status;
      resp.final = ev.response.output_text ?? null;
      resp.done = true;
    }
  }
}
const responses = resilient(resp,
  async () => readResponse(await openai.responses.create({ model: "fake", input: "talk", stream: true })),
  async () => readResponse(await openai.responses.retrieve(resp.id, { stream: true, starting_after: resp.seqs.at(-1) })));

// Chat completions on a stored conversation: a broken stream is the same
// request sent again with its Idempotency-Key, answered from the first
// attempt's turn, from its start (PROTOCOL.md, Retries).
const chat = client("chat");
const conv = await (await fetch(base + "/agentik/conversations", { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" })).json();
chat.conversation = conv.id;
chat.ids = [];
async function chatAttempt() {
  chat.text = ""; // each attempt is the turn from its start
  const stream = await openai.chat.completions.create(
    { model: "fake", messages: [{ role: "user", content: "talk" }], stream: true },
    { headers: { "X-Agentik-Conversation": conv.id, "Idempotency-Key": "chaos-chat" } },
  );
  for await (const c of stream) {
    if (!chat.ids.includes(c.id)) chat.ids.push(c.id);
    const ch = c.choices[0];
    if (ch?.delta?.content) chat.text += ch.delta.content;
    if (ch?.finish_reason) {
      chat.finish = ch.finish_reason;
      chat.done = true;
    }
  }
}
const chatDone = resilient(chat, chatAttempt, chatAttempt);

// A2A: a streamed task, resubscribed: its snapshot, then its updates.
const withKey = (url, init = {}) => {
  const h = new Headers(init.headers);
  h.set("Authorization", "Bearer " + key);
  return fetch(url, { ...init, headers: h });
};
const a2aClient = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey }),
})).createFromUrl(base);
const a2a = client("a2a");
a2a.states = [];
const a2aState = (s) => ["UNSPECIFIED", "SUBMITTED", "WORKING", "COMPLETED", "FAILED", "CANCELED", "INPUT_REQUIRED"][s] ?? String(s);
const partText = (parts) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
async function followTask(gen) {
  for await (const ev of gen) {
    const p = ev.payload;
    if (p.$case === "task") {
      a2a.task = p.value.id;
      a2a.contextId = p.value.contextId;
      a2a.text = (p.value.artifacts ?? []).map((x) => partText(x.parts)).join("");
      const st = a2aState(p.value.status?.state);
      a2a.states.push(st);
      if (["COMPLETED", "FAILED", "CANCELED"].includes(st)) a2a.done = true; // over before the resubscription
    } else if (p.$case === "artifactUpdate") {
      const t = partText(p.value.artifact.parts);
      a2a.text = p.value.append ? a2a.text + t : t;
    } else if (p.$case === "statusUpdate") {
      const st = a2aState(p.value.status.state);
      a2a.states.push(st);
      if (["COMPLETED", "FAILED", "CANCELED"].includes(st)) a2a.done = true;
    }
  }
}
const a2aDone = resilient(a2a,
  () => followTask(a2aClient.sendMessageStream({ message: { messageId: "chaos-a2a", role: 1, parts: [{ content: { $case: "text", value: "talk" } }] } })),
  () => followTask(a2aClient.resubscribeTask({ id: a2a.task })));

// MCP: ask_agentik with progress; the SDK reconnects the call's stream
// with its Last-Event-ID by itself.
const mcp = client("mcp");
const mcpClient = new Client({ name: "agentik-chaos", version: "1.0.0" });
mcpClient.onerror = (e) => mcp.errors.length < 20 && mcp.errors.push(errText(e));
await mcpClient.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp"), {
  requestInit: { headers },
  reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 1000 },
}));
mcp.attempts = 1;
const mcpDone = mcpClient
  .callTool({ name: "ask_agentik", arguments: { message: "talk" } }, undefined, {
    timeout: 120000,
    onprogress: (p) => (mcp.text += p.message ?? ""),
  })
  .then((r) => {
    mcp.result = r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
    mcp.isError = !!r.isError;
  })
  .catch((e) => (mcp.thrown = errText(e)))
  .finally(() => (mcp.done = true));

// AI SDK: the chat's stream, and reconnectToStream after each break (the
// turn's stream again from its start, one UI message by its id).
const transport = new DefaultChatTransport({ api: base + "/agentik/ai-sdk/chat", headers });
const aisdk = client("aisdk");
aisdk.messageIds = [];
async function readChat(stream) {
  if (!stream) {
    // 204: nothing runs, the chat's last turn ended well. A page then has
    // the answer from the chat's history, as after a reload (PROTOCOL.md).
    const c = await (await fetch(base + "/agentik/conversations/" + chatId, { headers })).json();
    if (c.running) {
      aisdk.anomalies.push("reconnectToStream: 204 while the turn ran");
      return;
    }
    const { messages } = await (await fetch(base + "/agentik/conversations/" + chatId + "/messages", { headers })).json();
    const last = messages.at(-1);
    aisdk.history = true;
    aisdk.text = last?.type === "assistant_message" ? last.content.map((p) => p.body ?? "").join("") : "";
    aisdk.done = true;
    return;
  }
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (value.type === "start") {
      aisdk.text = ""; // the stream from its start: the same message again
      if (!aisdk.messageIds.includes(value.messageId)) aisdk.messageIds.push(value.messageId);
    }
    if (value.type === "text-delta") aisdk.text += value.delta;
    if (value.type === "error") aisdk.anomalies.push("error chunk: " + value.errorText);
    if (value.type === "finish") aisdk.done = true;
  }
}
const chatId = "chaos-aisdk";
const aisdkDone = resilient(aisdk,
  async () => readChat(await transport.sendMessages({ chatId, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "talk" }] }], trigger: "submit-message", abortSignal: undefined })),
  async () => readChat(await transport.reconnectToStream({ chatId })));

// AG-UI: one HttpAgent; after a break, a run without new input. Its text
// is the agent's own state: the content of its assistant message.
const agui = client("agui");
const agent = new HttpAgent({ url: base + "/agentik/ag-ui", headers, threadId: "chaos-agui" });
agent.addMessage({ id: "agui-u1", role: "user", content: "talk" });
const aguiRun = () =>
  agent.runAgent({}, {
    onTextMessageContentEvent({ event, textMessageBuffer }) { agui.text = textMessageBuffer + event.delta; },
    onMessagesSnapshotEvent({ event }) { agui.text = event.messages.filter((m) => m.role === "assistant").at(-1)?.content ?? agui.text; },
    onRunErrorEvent({ event }) { agui.anomalies.push("RUN_ERROR " + event.code + ": " + event.message); },
    onRunFinishedEvent(e) { agui.outcome = e.outcome; agui.done = true; },
  });
const aguiDone = resilient(agui, aguiRun, aguiRun);

// What each client shows, on stderr every second: the test prints it when
// a wait times out.
setInterval(() => console.error(JSON.stringify(Object.fromEntries(Object.entries(clients).map(([k, s]) => [k, { done: s.done, attempts: s.attempts, text: s.text.slice(-60), len: s.text.length, errors: s.errors.slice(-2), anomalies: s.anomalies }])))), 1000).unref();

// The test's questions.
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const n = Number(line.replace("want ", ""));
  const last = n === targets.length - 1;
  for (const deadline = Date.now() + 45000; Date.now() < deadline; ) {
    const all = Object.values(clients);
    // A client whose turn ended early, or whose text is no longer a
    // prefix of the answer (a piece twice, or one missing), will not see
    // it: answer at once, the test reports what it saw.
    if (last ? all.every((s) => s.done) : all.every((s) => s.text === targets[n]) || all.some((s) => s.done || !targets[n].startsWith(s.text))) break;
    await sleep(20);
  }
  console.log(JSON.stringify({ saw: n, texts: last ? undefined : Object.fromEntries(Object.entries(clients).map(([k, s]) => [k, s.text.length])) }));
  if (last) break;
}
await Promise.all([responses, chatDone, a2aDone, mcpDone, aisdkDone, aguiDone]);
agui.messages = agent.messages.map((m) => ({ role: m.role, content: m.content }));
console.log(JSON.stringify({ clients, unhandled }));
await mcpClient.close().catch(() => {});
process.exit(0);
