// The official OpenAI Node SDK against agentik's Responses API. Run by
// responses_test.go with AGENTIK_URL and AGENTIK_KEY; the first argument
// picks what to do (default: every step against one server). Prints one
// JSON object of what each step saw, for the Go test to check.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.AGENTIK_URL + "/v1", apiKey: process.env.AGENTIK_KEY || "unused", maxRetries: 0 });
const out = {};
const mode = process.argv[2] ?? "all";

// read consumes a stream of events into { text, seqs, types, last }.
async function read(stream, into = { text: "", seqs: [], types: [], id: null, status: null }, stopAfterDeltas = Infinity) {
  let deltas = 0;
  for await (const ev of stream) {
    into.seqs.push(ev.sequence_number);
    into.types.push(ev.type);
    if (ev.type === "response.created") into.id = ev.response.id;
    if (ev.type === "response.output_text.delta") {
      into.text += ev.delta;
      if (++deltas >= stopAfterDeltas) break;
    }
    if (ev.response && ["response.completed", "response.failed", "response.incomplete"].includes(ev.type)) {
      into.status = ev.response.status;
      into.error = ev.response.error;
    }
  }
  return into;
}

if (mode === "all") {
  // A plain response, stored by default.
  const plain = await client.responses.create({ model: "fake", input: "hello responses" });
  out.plain = { id: plain.id, text: plain.output_text, status: plain.status, usage: plain.usage, object: plain.object, conversation: plain.conversation?.id };

  // A streamed one: every event numbered from 0, the text in deltas.
  const streamed = await read(await client.responses.create({ model: "fake", input: "[[tokens=30]]", stream: true }));
  out.streamed = streamed;

  // store: false: answered from a temp conversation that is gone after.
  const temp = await client.responses.create({ model: "fake", input: "not kept", store: false });
  const tempStream = await read(await client.responses.create({ model: "fake", input: "not kept either", store: false, stream: true }));
  let tempGone = false;
  try { await client.responses.retrieve(temp.id); } catch (e) { tempGone = e.status === 404; }
  out.temp = { text: temp.output_text, store: temp.store, conversation: temp.conversation ?? null, streamed: tempStream.text, gone: tempGone };

  // Retrieved: the same answer.
  const got = await client.responses.retrieve(plain.id);
  out.retrieved = { text: got.output_text, status: got.status };

  // previous_response_id continues the conversation, and continuing an
  // earlier response than the latest makes a branch.
  const second = await client.responses.create({ model: "fake", input: "second", previous_response_id: plain.id });
  const branch = await client.responses.create({ model: "fake", input: "branch", previous_response_id: plain.id });
  out.previous = { text: second.output_text, conversation: second.conversation?.id, previous: second.previous_response_id, branch: branch.output_text, branch_conversation: branch.conversation?.id };

  // A background stream dropped midway, resumed with starting_after.
  const bg = await client.responses.create({ model: "fake", input: "[[tokens=200]] [[delay=5ms]]", background: true, stream: true });
  const before = await read(bg, undefined, 20);
  bg.controller.abort();
  const last = before.seqs[before.seqs.length - 1];
  const after = await read(await client.responses.retrieve(before.id, { stream: true, starting_after: last }));
  const final = await client.responses.retrieve(before.id);
  out.resumed = { before: before.seqs, after: after.seqs, text: before.text + after.text, final: final.output_text, status: final.status, background: final.background };

  // Not only background responses: a plain stream dropped midway goes on
  // (stop is a command, a disconnect is not) and resumes the same way.
  const fg = await client.responses.create({ model: "fake", input: "[[tokens=100]] [[delay=5ms]]", stream: true });
  const fgBefore = await read(fg, undefined, 10);
  fg.controller.abort();
  const fgAfter = await read(await client.responses.retrieve(fgBefore.id, { stream: true, starting_after: fgBefore.seqs[fgBefore.seqs.length - 1] }));
  out.foreground = { seqs: [...fgBefore.seqs, ...fgAfter.seqs], text: fgBefore.text + fgAfter.text, status: fgAfter.status };

  // The SDK's own resume helper: responses.stream({response_id, starting_after}).
  const helper = client.responses.stream({ response_id: before.id, starting_after: last });
  let helperText = "";
  helper.on("response.output_text.delta", (e) => (helperText += e.delta));
  const helperFinal = await helper.finalResponse();
  out.helper = { text: before.text + helperText, final: helperFinal.output_text };

  // Cancel a background response.
  const long = await client.responses.create({ model: "fake", input: "[[tokens=2000]] [[delay=10ms]]", background: true });
  const cancelled = await client.responses.cancel(long.id);
  const afterCancel = await client.responses.retrieve(long.id);
  out.cancel = { queued: long.status, status: cancelled.status, retrieved: afterCancel.status };

  // A function tool round: the call comes back, its output continues.
  const tools = [{ type: "function", name: "get_time", description: "the time", parameters: { type: "object", properties: {} }, strict: false }];
  const first = await client.responses.create({ model: "fake", input: "[[tool=get_time]]", tools });
  const call = first.output.find((it) => it.type === "function_call");
  const answered = await client.responses.create({
    model: "fake", tools, previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "noon" }],
  });
  out.function = { name: call?.name, status: first.status, answer: answered.output_text };

  // An MCP tool round with approval: agentik's everything__echo needs one.
  const asks = await client.responses.create({ model: "fake", input: '[[tool=everything__echo args={"message":"ping"}]]' });
  const req = asks.output.find((it) => it.type === "mcp_approval_request");
  const approved = await client.responses.create({
    model: "fake", previous_response_id: asks.id,
    input: [{ type: "mcp_approval_response", approval_request_id: req.id, approve: true }],
  });
  const mcp = approved.output.find((it) => it.type === "mcp_call");
  out.mcp = { status: asks.status, request: req && { name: req.name, server: req.server_label }, call: mcp && { output: mcp.output, approval: mcp.approval_request_id, arguments: mcp.arguments }, answer: approved.output_text };

  // What shapes the answer reaches the model: format, tool choice,
  // reasoning effort, one call per round, sampling, the instructions.
  const shaped = await client.responses.create({
    model: "fake", input: "shaped", instructions: "Answer in JSON.", tools, tool_choice: "required", parallel_tool_calls: false,
    text: { format: { type: "json_schema", name: "answer", schema: { type: "object", properties: { a: { type: "string" } } }, strict: true } },
    reasoning: { effort: "low" }, temperature: 0.5, top_p: 0.9, max_output_tokens: 64, metadata: { run: "shaped" },
  });
  out.shaped = { status: shaped.status, instructions: shaped.instructions, metadata: shaped.metadata, format: shaped.text.format.type, effort: shaped.reasoning.effort, temperature: shaped.temperature, tool_choice: shaped.tool_choice };

  // Conversations: made with items, added to, continued by a response,
  // listed, deleted.
  const conv = await client.conversations.create({ items: [{ type: "message", role: "user", content: "my color is blue" }] });
  await client.conversations.items.create(conv.id, { items: [{ type: "message", role: "assistant", content: "noted" }] });
  const inConv = await client.responses.create({ model: "fake", input: "which color?", conversation: conv.id });
  const items = [];
  for await (const it of client.conversations.items.list(conv.id, { order: "asc", limit: 2 })) items.push(it.type + ":" + it.role + ":" + (it.content?.[0]?.text ?? ""));
  const gotConv = await client.conversations.retrieve(conv.id);
  await client.conversations.delete(conv.id);
  let gone = false;
  try { await client.conversations.retrieve(conv.id); } catch (e) { gone = e.status === 404; }
  out.conversations = { id: conv.id, object: gotConv.object, answer: inConv.output_text, in: inConv.conversation?.id, items, gone };

  // An unknown model is refused.
  try {
    await client.responses.create({ model: "gpt-unknown", input: "hi" });
    out.unknown = { refused: false };
  } catch (e) {
    out.unknown = { refused: true, status: e.status, code: e.code, param: e.param, type: e.type, sdk_error: e instanceof OpenAI.NotFoundError };
  }
}

if (mode === "start") {
  // A background stream read until 20 deltas, then left: the Go test
  // kills the server.
  const bg = await client.responses.create({ model: "fake", input: "[[tokens=2000]] [[delay=5ms]]", background: true, stream: true });
  const before = await read(bg, undefined, 20);
  out.start = before;
  console.log(JSON.stringify(out));
  process.exit(0);
}

if (mode === "finish") {
  // After the restart: resume from the last event seen.
  const id = process.argv[3], last = Number(process.argv[4]);
  const after = await read(await client.responses.retrieve(id, { stream: true, starting_after: last }));
  const final = await client.responses.retrieve(id);
  out.finish = { after: after.seqs, text: after.text, status: final.status, error: final.error, final: final.output_text };
}

console.log(JSON.stringify(out));
