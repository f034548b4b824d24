// Approvals asked of MCP clients: @modelcontextprotocol/sdk's Client
// against agentik with AGENTIK_APPROVAL_TIMEOUT set. Run by
// mcpserve_test.go with AGENTIK_URL and AGENTIK_KEY; prints one JSON
// object of what each call saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const connect = async (capabilities, answer) => {
  const client = new Client({ name: "agentik-test", version: "1.0.0" }, { capabilities });
  const asked = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return answer;
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.AGENTIK_URL + "/mcp"), { requestInit: { headers: { Authorization: "Bearer " + process.env.AGENTIK_KEY } } }));
  return { client, asked };
};
const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const ask = async ({ client, asked }, message) => {
  const t0 = Date.now();
  const r = await client.callTool({ name: "ask_agentik", arguments: { message: `[[tool=everything__echo args={"message":"${message}"}]]` } });
  await client.close();
  return { text: textOf(r), isError: !!r.isError, asked: asked.length, ms: Date.now() - t0 };
};
const out = {};
// No elicitation: the call waits for the UI, bounded by the timeout.
out.plain = await ask(await connect({}), "ping plain");
// Elicitation cancelled: left to the UI, bounded by the timeout too.
out.cancelled = await ask(await connect({ elicitation: {} }, { action: "cancel" }), "ping cancel");
// Elicitation declined: denied at once.
out.declined = await ask(await connect({ elicitation: {} }, { action: "decline" }), "ping decline");
// Elicitation accepted with a denial and its reason.
out.denied = await ask(await connect({ elicitation: {} }, { action: "accept", content: { decision: "deny", reason: "not today" } }), "ping deny");
console.log(JSON.stringify(out));
process.exit(0);
