// @modelcontextprotocol/sdk's Client reads agentik's knowledge bases as
// MCP resources. Run by knowledge_sdk_test.go with AGENTIK_URL,
// AGENTIK_KEY (ann's), OTHER_KEY (bob's) and the base's id in argv.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [id] = process.argv.slice(2);
const connect = async (k) => {
  const client = new Client({ name: "agentik-test", version: "1.0.0" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.AGENTIK_URL + "/mcp"), { requestInit: { headers: { Authorization: "Bearer " + k } } }));
  return client;
};
const uri = "agentik://knowledge/" + id;
const ann = await connect(process.env.AGENTIK_KEY);
const bob = await connect(process.env.OTHER_KEY);
const out = {};
out.ann_list = (await ann.listResources()).resources.map((r) => r.uri);
out.ann_read = (await ann.readResource({ uri })).contents[0]?.text ?? "";
out.bob_list = (await bob.listResources()).resources.map((r) => r.uri);
try {
  await bob.readResource({ uri });
  out.bob_read = "read";
} catch (e) {
  out.bob_read = e.code;
}
console.log(JSON.stringify(out));
await ann.close();
await bob.close();
