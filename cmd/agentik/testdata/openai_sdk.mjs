// The official OpenAI Node SDK against agentik's /v1 facade. Run by
// openai_test.go with AGENTIK_URL, AGENTIK_KEY and AGENTIK_CONVERSATION;
// prints one JSON object of what each step saw, for the Go test to check.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.AGENTIK_URL + "/v1", apiKey: process.env.AGENTIK_KEY, maxRetries: 0 });
const out = {};
const ask = (content, extra = {}, opts = {}) =>
  client.chat.completions.create({ model: "fake", messages: [{ role: "user", content }], ...extra }, opts);

// The models list.
out.models = [];
for await (const m of client.models.list()) out.models.push(m.id);

// A plain completion with usage.
const plain = await ask("hello sdk");
out.plain = { content: plain.choices[0].message.content, finish: plain.choices[0].finish_reason, usage: plain.usage, object: plain.object };

// A streamed completion with usage in its last chunk.
const stream = await ask("[[tokens=30]]", { stream: true, stream_options: { include_usage: true } });
out.streamed = { content: "", chunks: 0, usage: null, finish: null };
for await (const chunk of stream) {
  out.streamed.chunks++;
  if (chunk.usage) out.streamed.usage = chunk.usage;
  for (const c of chunk.choices) {
    out.streamed.content += c.delta.content ?? "";
    if (c.finish_reason) out.streamed.finish = c.finish_reason;
  }
}

// A server-side MCP tool: agentik runs everything__echo, the client gets the answer.
const served = await ask('[[tool=everything__echo args={"message":"ping from the sdk"}]]');
out.server_tool = { content: served.choices[0].message.content, finish: served.choices[0].finish_reason };

// A client-side tool: the call comes back for the client to run.
const tools = [{ type: "function", function: { name: "get_time", description: "the time", parameters: { type: "object", properties: {} } } }];
const first = await ask("[[tool=get_time]]", { tools });
const call = first.choices[0].message.tool_calls?.[0];
out.client_tool = { finish: first.choices[0].finish_reason, name: call?.function.name };
const second = await client.chat.completions.create({
  model: "fake", tools,
  messages: [{ role: "user", content: "[[tool=get_time]]" }, first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "noon" }],
});
out.client_tool.answer = second.choices[0].message.content;

// A stored conversation continued by header, streamed.
const conv = await ask("via header", { stream: true }, { headers: { "X-Agentik-Conversation": process.env.AGENTIK_CONVERSATION } });
out.header = "";
for await (const chunk of conv) for (const c of chunk.choices) out.header += c.delta.content ?? "";

// An unknown model is refused.
try {
  await client.chat.completions.create({ model: "gpt-unknown", messages: [{ role: "user", content: "hi" }] });
  out.unknown = { refused: false };
} catch (e) {
  out.unknown = { refused: true, status: e.status, code: e.code, param: e.param, type: e.type, sdk_error: e instanceof OpenAI.NotFoundError };
}

console.log(JSON.stringify(out));
