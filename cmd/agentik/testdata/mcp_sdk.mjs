// @modelcontextprotocol/sdk's Client against agentik's MCP server over
// streamable HTTP. Run by mcp_test.go with AGENTIK_URL and AGENTIK_KEY;
// prints one JSON object of what each step saw, for the Go test to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { discoverOAuthProtectedResourceMetadata, extractResourceMetadataUrl } from "@modelcontextprotocol/sdk/client/auth.js";

const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const connect = async (k, capabilities = {}) => {
  const client = new Client({ name: "agentik-test", version: "1.0.0" }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(base + "/mcp"), { requestInit: { headers: { Authorization: "Bearer " + k } } });
  await client.connect(transport);
  return client;
};
const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const rest = async (method, path, body) => {
  const res = await fetch(base + path, { method, headers: { Authorization: "Bearer " + key, "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
  return res.json();
};
const out = {};
const client = await connect(key);

// The tools: one per agent.
const tools = await client.listTools();
out.tools = tools.tools.map((t) => ({ name: t.name, required: t.inputSchema.required, props: Object.keys(t.inputSchema.properties ?? {}), output: !!t.outputSchema }));

// A call with progress: the streamed text arrives as progress messages.
const progress = [];
const first = await client.callTool({ name: "ask_agentik", arguments: { message: "[[tokens=40 delay=2ms]]" } }, undefined, {
  onprogress: (p) => progress.push(p.message ?? ""),
});
out.first = { text: textOf(first), structured: first.structuredContent, isError: !!first.isError, progress: progress.length, progressText: progress.join("") };
const conv = first.structuredContent.conversation_id;

// Continuing by conversation_id.
const second = await client.callTool({ name: "ask_agentik", arguments: { message: "second", conversation_id: conv } });
out.second = { text: textOf(second), conversation_id: second.structuredContent?.conversation_id };

// The caller's conversations as resources, with their transcript.
const resources = await client.listResources();
out.resources = resources.resources.map((r) => r.uri);
const read = await client.readResource({ uri: "agentik://conversations/" + conv });
out.transcript = read.contents[0]?.text ?? "";
try {
  await client.readResource({ uri: "agentik://conversations/0123456789abcdef0123456789abcdef" });
} catch (e) {
  out.unknown_resource = e.code;
}

// Bad input: no message.
const bad = await client.callTool({ name: "ask_agentik", arguments: {} });
out.no_message = { isError: !!bad.isError, text: textOf(bad) };

// Cancellation interrupts the turn.
const ac = new AbortController();
let seen = 0;
const cancelled = client.callTool({ name: "ask_agentik", arguments: { message: "[[tokens=3000 delay=3ms]]", conversation_id: conv } }, undefined, {
  signal: ac.signal,
  onprogress: () => {
    if (++seen === 3) ac.abort("enough");
  },
});
try {
  await cancelled;
  out.cancel = "not cancelled";
} catch (e) {
  out.cancel = String(e.name ?? e);
}
out.cancel_conversation = conv;

// A tool call that needs approval, elicited from a client that supports it.
const eclient = await connect(key, { elicitation: {} });
let asked = "";
eclient.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked = req.params.message;
  return { action: "accept", content: { decision: "approve" } };
});
const approved = await eclient.callTool({ name: "ask_agentik", arguments: { message: '[[tool=everything__echo args={"message":"ping mcp"}]]' } });
out.elicited = { asked, text: textOf(approved), isError: !!approved.isError };

// Without elicitation the call waits for the UI: decided over REST here.
const waiting = client.callTool({ name: "ask_agentik", arguments: { message: '[[tool=everything__echo args={"message":"ping ui"}]]' } });
let decided = false;
for (let i = 0; i < 400 && !decided; i++) {
  const list = await rest("GET", "/agentik/conversations");
  for (const c of list.conversations ?? []) {
    for (const call of c.waiting ?? []) {
      await rest("POST", `/agentik/conversations/${c.id}/approve`, { call_id: call, decision: "approve" });
      decided = true;
    }
  }
  if (!decided) await new Promise((r) => setTimeout(r, 50));
}
const viaUI = await waiting;
out.ui_approved = { text: textOf(viaUI), decided };

// Another user sees none of the admin's conversations.
const member = await connect(process.env.AGENTIK_MEMBER_KEY);
const theirs = await member.listResources();
const ask = await member.callTool({ name: "ask_agentik", arguments: { message: "hi", conversation_id: conv } });
out.member = { resources: theirs.resources.map((r) => r.uri), ask: { isError: !!ask.isError, text: textOf(ask) } };
try {
  await member.readResource({ uri: "agentik://conversations/" + conv });
  out.member.read = 0;
} catch (e) {
  out.member.read = e.code;
}
await member.close();

// A wrong key is refused.
try {
  await connect("wrong");
  out.wrong_key = "accepted";
} catch (e) {
  out.wrong_key = String(e.message ?? e);
}
// An OAuth-first client's discovery (RFC 9728): the 401's
// resource_metadata, then the document it names, and the well-known
// fallback the SDK tries without it.
const unauth = await fetch(base + "/mcp", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }) });
const prmURL = extractResourceMetadataUrl(unauth);
out.prm = { status: unauth.status, url: prmURL?.href };
out.prm.doc = await discoverOAuthProtectedResourceMetadata(new URL(base + "/mcp"), { resourceMetadataUrl: prmURL });
out.prm.fallback = await discoverOAuthProtectedResourceMetadata(new URL(base + "/mcp"));
await client.close();
await eclient.close();
console.log(JSON.stringify(out));
process.exit(0);
