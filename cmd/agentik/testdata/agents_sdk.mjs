// Stored agents through both agent protocols: @a2a-js/sdk's client and
// @modelcontextprotocol/sdk's Client against agentik, for one caller. Run
// by agentproto_test.go with AGENTIK_URL, AGENTIK_KEY and AGENTS_PHASE
// (admin, member, edited, openai: the official openai SDK naming agents
// as models agent/<slug>); prints one JSON object of what each step saw.
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";

const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const phase = process.env.AGENTS_PHASE;
const withKey = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", "Bearer " + key);
  return fetch(url, { ...init, headers });
};
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey }),
}));
let n = 0;
const message = (s, extra = {}) => ({ messageId: `m-${process.pid}-${++n}`, role: 1, parts: [{ content: { $case: "text", value: s } }], ...extra });
const artifactText = (task) => (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const failure = async (f) => {
  try {
    await f();
    return "no error";
  } catch (e) {
    return String(e.message ?? e);
  }
};

// a2a asks agent slug over A2A: its card, and one answer.
async function a2a(slug) {
  const client = await factory.createFromUrl(`${base}/a2a/${slug}/`);
  const card = client.agentCard;
  const task = await client.sendMessage({ message: message("who are you? [[system]]") });
  const second = await client.sendMessage({ message: message("again", { contextId: task.contextId }) });
  return {
    card: { name: card.name, description: card.description, url: card.supportedInterfaces[0]?.url, skills: card.skills.map((s) => ({ id: s.id, name: s.name, examples: s.examples })) },
    text: artifactText(task), context: task.contextId, second: artifactText(second),
  };
}

const mcp = new Client({ name: "agentik-test", version: "1.0.0" });
await mcp.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp"), { requestInit: { headers: { Authorization: "Bearer " + key } } }));
const tools = async () => Object.fromEntries((await mcp.listTools()).tools.map((t) => [t.name, t.description]));

const out = {};
if (phase === "admin") {
  out.tools = await tools();
  out.a2a = await a2a("researcher");
  const r = await mcp.callTool({ name: "ask_researcher", arguments: { message: "who are you? [[system]]" } });
  out.mcp = { text: textOf(r), conversation: r.structuredContent?.conversation_id, isError: !!r.isError };
  // A conversation of one agent is not continued by another's tool.
  const other = await mcp.callTool({ name: "ask_agentik", arguments: { message: "hi", conversation_id: out.mcp.conversation } });
  out.other_tool = { isError: !!other.isError, text: textOf(other) };
  const client = await factory.createFromUrl(`${base}/a2a/agentik/`);
  out.other_card = await failure(() => client.sendMessage({ message: message("hi", { contextId: out.a2a.context }) }));
} else if (phase === "member") {
  out.tools = await tools();
  out.card = (await withKey(`${base}/a2a/researcher/.well-known/agent-card.json`)).status;
  out.a2a = await a2a("ann-notes");
  const r = await mcp.callTool({ name: "ask_ann_notes", arguments: { message: "who are you? [[system]]" } });
  out.mcp = { text: textOf(r), isError: !!r.isError };
  const hidden = await mcp.callTool({ name: "ask_researcher", arguments: { message: "hi" } }).catch((e) => ({ content: [{ type: "text", text: String(e.message ?? e) }], isError: true }));
  out.hidden = { isError: !!hidden.isError, text: textOf(hidden) };
} else if (phase === "openai") {
  const ai = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
  const ask = "who are you? [[system]]";
  const plain = await ai.responses.create({ model: "agent/researcher", input: ask });
  out.responses = { text: plain.output_text, model: plain.model, conversation: plain.conversation?.id };
  let streamed = "";
  for await (const ev of await ai.responses.create({ model: "agent/researcher", input: ask, stream: true })) {
    if (ev.type === "response.output_text.delta") streamed += ev.delta;
  }
  out.streamed = streamed;
  // Input items with history: a seeded conversation of the agent.
  const seeded = await ai.responses.create({ model: "agent/researcher", store: false, input: [{ role: "user", content: "earlier" }, { role: "assistant", content: "noted" }, { role: "user", content: ask }] });
  out.seeded = seeded.output_text;
  const chat = await ai.chat.completions.create({ model: "agent/researcher", messages: [{ role: "user", content: ask }] });
  out.chat = chat.choices[0].message.content;
  out.retrieved = (await ai.models.retrieve("agent/researcher")).id;
  out.listed = (await ai.models.list()).data.map((m) => m.id);
  out.unknown = await failure(() => ai.responses.create({ model: "agent/nobody", input: "hi" }));
  out.hidden = await failure(() => new OpenAI({ baseURL: base + "/v1", apiKey: process.env.AGENTIK_MEMBER_KEY, maxRetries: 0 }).responses.create({ model: "agent/researcher", input: "hi" }));
} else if (phase === "edited") {
  out.tools = await tools();
  const client = await factory.createFromUrl(`${base}/a2a/researcher/`);
  out.card = client.agentCard.description;
  out.deleted = (await withKey(`${base}/a2a/ann-notes/.well-known/agent-card.json`)).status;
}
await mcp.close();
console.log(JSON.stringify(out));
process.exit(0);
