// The official OpenAI Node SDK against agentik's /v1 facade. Run by
// openai_test.go with AGENTIK_URL, AGENTIK_KEY, AGENTIK_CONVERSATION and
// AGENTIK_RETRY_CONVERSATION, AGENTIK_IDEMPOTENT_CONVERSATION,
// AGENTIK_ORPHAN_CONVERSATION (stored conversations of their own); prints
// one JSON object of what each step saw, for the Go test to check.
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

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

// One model, retrieved; an unknown one is a NotFoundError.
out.model = (await client.models.retrieve("fake")).id;
try {
  await client.models.retrieve("nope");
  out.model_unknown = { refused: false };
} catch (e) {
  out.model_unknown = { refused: true, status: e.status, code: e.code, sdk_error: e instanceof OpenAI.NotFoundError };
}

// Every answer has a request id, errors too.
const { data: withID, request_id } = await ask("hello id").withResponse();
out.request_id = { ok: request_id ?? "", content: withID.choices[0].message.content };
try {
  await client.chat.completions.create({ model: "gpt-unknown", messages: [{ role: "user", content: "hi" }] });
} catch (e) {
  out.request_id.error = e.requestID ?? "";
}

// Structured output: parse with a zod schema (json_schema), and json_object.
const Weather = z.object({ city: z.string(), celsius: z.number() });
const parsed = await client.chat.completions.parse({
  model: "fake",
  messages: [{ role: "user", content: '[[text={"city":"Paris","celsius":21}]] weather' }],
  response_format: zodResponseFormat(Weather, "weather"),
});
out.parsed = parsed.choices[0].message.parsed;
const jsonMode = await ask('[[text={"ok":true}]] json mode', { response_format: { type: "json_object" } });
out.json_object = JSON.parse(jsonMode.choices[0].message.content);

// Every tool_choice form reaches the model.
out.tool_choice = {};
for (const [name, choice] of [
  ["none", "none"],
  ["required", "required"],
  ["named", { type: "function", function: { name: "get_time" } }],
  ["allowed", { type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "get_time" } }] } }],
]) {
  const r = await ask(`choice ${name}`, { tools, tool_choice: choice });
  out.tool_choice[name] = r.choices[0].finish_reason;
}
// A forced server-side tool: the model calls it, then chooses freely.
const forced = await ask('[[tool=everything__echo args={"message":"forced"}]]', { tool_choice: { type: "function", function: { name: "everything__echo" } } });
out.forced = forced.choices[0].message.content;

// A stream that fails before its first token is an HTTP error the SDK classifies.
try {
  const s = await ask("[[error=400]] streamed failure", { stream: true });
  for await (const _ of s);
  out.stream_error = { thrown: false };
} catch (e) {
  out.stream_error = { thrown: true, status: e.status ?? null, type: e.type ?? null, server_error: e instanceof OpenAI.InternalServerError, request_id: e.requestID ?? "" };
}

// A failed turn of a stored conversation is not retried (x-should-retry:
// false), though this client retries 5xx twice.
const retrying = new OpenAI({ baseURL: process.env.AGENTIK_URL + "/v1", apiKey: process.env.AGENTIK_KEY, maxRetries: 2 });
try {
  await retrying.chat.completions.create({ model: "fake", messages: [{ role: "user", content: "[[error=400]] fail once" }] },
    { headers: { "X-Agentik-Conversation": process.env.AGENTIK_RETRY_CONVERSATION } });
  out.retry = { thrown: false };
} catch (e) {
  out.retry = { thrown: true, status: e.status, should_retry: e.headers?.get("x-should-retry") ?? null };
}

// The same Idempotency-Key, or an SDK retry of the latest input, is the same turn.
const idem = { "X-Agentik-Conversation": process.env.AGENTIK_IDEMPOTENT_CONVERSATION };
const onceOnly = { model: "fake", messages: [{ role: "user", content: "once only" }] };
const a = await retrying.chat.completions.create(onceOnly, { headers: { ...idem, "Idempotency-Key": "key-1" } });
const b = await retrying.chat.completions.create(onceOnly, { headers: { ...idem, "Idempotency-Key": "key-1" } });
const twice = { model: "fake", messages: [{ role: "user", content: "said twice" }] };
const c = await retrying.chat.completions.create(twice, { headers: idem });
const d = await retrying.chat.completions.create(twice, { headers: { ...idem, "X-Stainless-Retry-Count": "1" } });
out.idempotent = [a, b, c, d].map((r) => r.choices[0].message.content);

// A tool message that answers no call is refused, and nothing is stored.
try {
  await client.chat.completions.create({ model: "fake", messages: [{ role: "tool", tool_call_id: "call_nobody", content: "stray" }] },
    { headers: { "X-Agentik-Conversation": process.env.AGENTIK_ORPHAN_CONVERSATION } });
  out.orphan = { refused: false };
} catch (e) {
  out.orphan = { refused: true, status: e.status, bad_request: e instanceof OpenAI.BadRequestError };
}

console.log(JSON.stringify(out));
