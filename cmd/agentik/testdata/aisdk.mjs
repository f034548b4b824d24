// The AI SDK (npm package ai) against agentik's UI message stream: its own
// DefaultChatTransport and readUIMessageStream, as useChat uses them. Run
// by aisdk_test.go with AGENTIK_URL, AGENTIK_KEY, AGENTIK_CHAT (the chat
// id of the main conversation) and AI_PACKAGE (the package: "ai" is
// major 7, "ai6" major 6); prints one JSON object of what each step saw,
// for the Go test to check.
const { DefaultChatTransport, readUIMessageStream } = await import(process.env.AI_PACKAGE || "ai");

const base = process.env.AGENTIK_URL;
const headers = { Authorization: "Bearer " + process.env.AGENTIK_KEY };
const api = base + "/agentik/ai-sdk/chat";
const transport = new DefaultChatTransport({ api, headers });
const chatId = process.env.AGENTIK_CHAT;
const out = {};
let n = 0;
const user = (text) => ({ id: "u" + ++n, role: "user", parts: [{ type: "text", text }] });

// last reads a stream to its end and returns the final message.
async function last(stream, message) {
  let m;
  for await (const snap of readUIMessageStream({ stream, message, terminateOnError: true })) m = snap;
  return m;
}
const summary = (m) => ({
  id: m.id,
  text: m.parts.filter((p) => p.type === "text").map((p) => p.text).join(""),
  reasoning: m.parts.filter((p) => p.type === "reasoning").map((p) => p.text).join(""),
  tools: m.parts.filter((p) => p.type === "dynamic-tool").map((p) => ({ name: p.toolName, state: p.state, input: p.input, output: p.output })),
  steps: m.parts.filter((p) => p.type === "step-start").length,
  usage: m.metadata?.usage,
});

// 1. A streamed answer with reasoning and a server-side MCP tool.
const messages = [user('[[reasoning]] [[tool=everything__echo args={"message":"ping from useChat"}]]')];
const first = await last(await transport.sendMessages({ chatId, messages, trigger: "submit-message", abortSignal: undefined }));
out.first = summary(first);
messages.push(first);

// 2. A second message in the same chat: only the last one is new.
messages.push(user("second message"));
const second = await last(await transport.sendMessages({ chatId, messages, trigger: "submit-message", abortSignal: undefined }));
out.second = summary(second);
messages.push(second);

// 3. A drop mid-answer, then reconnectToStream gives the whole message.
messages.push(user("[[tokens=150]] [[delay=20ms]]"));
const abort = new AbortController();
const cut = await transport.sendMessages({ chatId, messages, trigger: "submit-message", abortSignal: abort.signal });
const reader = cut.getReader();
let seen = 0;
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  if (value.type === "text-delta" && ++seen >= 3) break;
}
abort.abort();
await reader.cancel().catch(() => {});
const resumed = await transport.reconnectToStream({ chatId });
out.resumed = resumed ? summary(await last(resumed)) : null;
out.resumed_before_drop = seen;

// 4. Nothing runs: reconnectToStream answers null (HTTP 204).
out.idle = await transport.reconnectToStream({ chatId });
// … and on a chat never used (useChat({resume: true}) asks on mount).
out.fresh = await transport.reconnectToStream({ chatId: chatId + "-never-used" });

// 5. A tool that waits for approval, answered as addToolApprovalResponse does.
const approvalChat = chatId + "-approval";
const am = [user('[[tool=everything__get-sum args={"a":2,"b":3}]]')];
const asked = await last(await transport.sendMessages({ chatId: approvalChat, messages: am, trigger: "submit-message", abortSignal: undefined }));
const askedPart = asked.parts.find((p) => p.type === "dynamic-tool");
out.asked = { state: askedPart?.state, approval: askedPart?.approval?.id, tool: askedPart?.toolName };
const answered = structuredClone(asked);
for (const p of answered.parts) if (p.state === "approval-requested") { p.state = "approval-responded"; p.approval = { ...p.approval, approved: true }; }
am.push(answered);
const answeredAgain = structuredClone(answered); // readUIMessageStream updates answered in place
const done = await last(await transport.sendMessages({ chatId: approvalChat, messages: am, trigger: "submit-message", messageId: answered.id, abortSignal: undefined }), answered);
out.approved = summary(done);
// The same answer sent again (another tab, a retry): decided already, the
// stream just ends.
try {
  const again = await last(await transport.sendMessages({ chatId: approvalChat, messages: [am[0], answeredAgain], trigger: "submit-message", messageId: answered.id, abortSignal: undefined }), answeredAgain);
  out.approved_again = { ok: true, parts: again.parts.length, before: answeredAgain.parts.length };
} catch (e) {
  out.approved_again = { ok: false, error: String(e) };
}

// 6. Regenerate the last answer of the main chat.
const regen = await last(await transport.sendMessages({ chatId, messages: messages.slice(0, 3), trigger: "regenerate-message", abortSignal: undefined }));
out.regenerated = summary(regen);

// 7. Bad input: typed JSON errors, nothing stored.
async function bad(body, id) {
  const res = await fetch(api, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) });
  const err = await res.json().catch(() => null);
  const stored = id ? (await fetch(base + "/agentik/conversations/" + id, { headers })).status : 0;
  return { status: res.status, code: err?.code, message: err?.message, stored };
}
out.bad = {
  shape: await bad({ id: "bad-shape", messages: "hello", trigger: "submit-message" }, "bad-shape"),
  no_trigger: await bad({ id: "bad-trigger", messages: [user("hi")] }, "bad-trigger"),
  regenerate_empty: await bad({ id: "bad-regen", messages: [], trigger: "regenerate-message" }, "bad-regen"),
  regenerate_unknown: await bad({ id: "bad-unknown", messages: [user("hi")], trigger: "regenerate-message" }, "bad-unknown"),
  blank: await bad({ id: "bad-blank", messages: [{ id: "x", role: "user", parts: [{ type: "text", text: "  " }] }], trigger: "submit-message" }, "bad-blank"),
  bad_id: await bad({ id: "../x", messages: [user("hi")], trigger: "submit-message" }),
};
// The transport itself surfaces such an error.
try {
  await transport.sendMessages({ chatId: "bad-transport", messages: [], trigger: "submit-message", abortSignal: undefined });
  out.transport_error = null;
} catch (e) {
  out.transport_error = { status: e.statusCode ?? 0, body: e.responseBody ?? e.message }; // ai 6 throws the body as the message
}

console.log(JSON.stringify(out));
