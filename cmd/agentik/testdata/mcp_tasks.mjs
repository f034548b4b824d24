// @modelcontextprotocol/ext-tasks (the tasks extension's TypeScript
// requester) on @modelcontextprotocol/client 2 pinned to 2026-07-28,
// against agentik's MCP server. The SDK's own codecs refuse a task handle
// on tools/call, so, as ext-tasks asks of its host, its tools/call and
// tasks/* go through rawDispatch: plain JSON-RPC POSTs to /mcp. Run by
// mcptask_test.go with AGENTIK_URL and AGENTIK_KEY; prints one JSON
// object of what each step saw.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const version = "2026-07-28";
const clientInfo = { name: "agentik-ext-tasks-test", version: "1.0.0" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { "io.modelcontextprotocol/tasks": {} } };

const client = new Client(clientInfo, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: version } } });
await client.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp"), { requestInit: { headers: { Authorization: "Bearer " + key } } }));

let nextID = 1;
const rawDispatch = async (request, options = {}) => {
  const msg = { jsonrpc: "2.0", id: nextID++, ...request };
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Authorization: "Bearer " + key, "Mcp-Protocol-Version": version, "Mcp-Method": msg.method };
  if (msg.method === "tools/call") headers["Mcp-Name"] = msg.params.name;
  const res = await fetch(base + "/mcp", { method: "POST", signal: options.signal, headers: { ...headers, ...(options.context?.headers ?? {}) }, body: JSON.stringify(msg) });
  const text = await res.text();
  let answer;
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const m = JSON.parse(line.slice(5));
      if (m.id === msg.id && ("result" in m || "error" in m)) answer = m;
    }
  } else {
    answer = JSON.parse(text);
  }
  if (!answer) throw new Error(`no answer to ${msg.method}: ${res.status} ${text}`);
  return answer.error ? { kind: "error", error: answer.error } : { kind: "result", result: answer.result };
};

const asked = [];
const session = createTaskSessionFromClient(client, {
  endpointId: "agentik-test",
  rawDispatch,
  v2RequestFraming: { protocolVersion: version, clientInfo, clientCapabilities },
  onInputRequest: async (request) => {
    asked.push(request.kind + ": " + (request.params?.message ?? ""));
    return { action: "accept", content: { decision: "approve" } };
  },
});
const textOf = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const out = { capabilities: session.capabilities };

// A long call: a task; its text so far while it works, then the answer.
const long = await session.callTool("ask_agentik", { message: "[[tokens=1500 delay=4ms]]" });
out.long = { kind: long.kind, taskId: long.handle?.taskId ?? "", working: [] };
{
  const { outcome } = await long.settle({
    onEvent: (ev) => {
      if (ev.type === "task" && ev.task.status === "working" && ev.task.statusMessage) out.long.working.push(ev.task.statusMessage);
    },
  });
  out.long.status = outcome.status;
  if (outcome.status === "failed") out.long.error = String(outcome.error?.cause ?? outcome.error);
  out.long.text = outcome.status === "completed" ? textOf(resultFromTaskOutcome(outcome)) : "";
}

// An approval inside a task: asked through tasks/get's inputRequests,
// answered by tasks/update.
const approval = await session.callTool("ask_agentik", { message: '[[tool=everything__echo args={"message":"ping ts"}]]' });
out.approval = { kind: approval.kind };
{
  const { outcome } = await approval.settle();
  out.approval.status = outcome.status;
  if (outcome.status === "failed") out.approval.error = String(outcome.error?.cause ?? outcome.error);
  out.approval.text = outcome.status === "completed" ? textOf(resultFromTaskOutcome(outcome)) : "";
}
out.asked = asked;

await session.close();
console.log(JSON.stringify(out));
