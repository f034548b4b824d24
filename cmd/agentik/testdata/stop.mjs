// A front end's Stop against agentik: the AI SDK's (useChat's stop()
// aborts the request of DefaultChatTransport.sendMessages) and AG-UI's
// (HttpAgent.abortRun()). Run by aisdk_test.go with AGENTIK_URL,
// AGENTIK_KEY, AGENTIK_CHAT and CLIENT ("ai-sdk": stop, then send again at
// once; "ag-ui": stop, wait for the turn to stop by itself, then run
// again); the model holds the first answer mid-stream. Prints one JSON
// object of what the client saw.
import { DefaultChatTransport } from "ai";
import { HttpAgent } from "@ag-ui/client";

const base = process.env.AGENTIK_URL;
const headers = { Authorization: "Bearer " + process.env.AGENTIK_KEY };
const chatId = process.env.AGENTIK_CHAT;
const out = {};
const conversation = async () => (await fetch(base + "/agentik/conversations/" + chatId, { headers })).json();

if (process.env.CLIENT === "ai-sdk") {
  const transport = new DefaultChatTransport({ api: base + "/agentik/ai-sdk/chat", headers });
  const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });
  const stop = new AbortController(); // useChat's stop() aborts this
  const stream = await transport.sendMessages({ chatId, messages: [user("u1", "first")], trigger: "submit-message", abortSignal: stop.signal });
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done || value.type === "text-delta") break;
  }
  stop.abort();
  await reader.cancel().catch(() => {});
  // The next message at once: not 409 busy, the stopped turn is over.
  try {
    const next = await transport.sendMessages({ chatId, messages: [user("u1", "first"), user("u2", "second")], trigger: "submit-message", abortSignal: undefined });
    let text = "";
    for await (const c of next) if (c.type === "text-delta") text += c.delta;
    out.next = { text };
  } catch (e) {
    out.next = { error: String(e), status: e.statusCode };
  }
} else {
  const agent = new HttpAgent({ url: base + "/agentik/ag-ui", headers, threadId: chatId });
  agent.addMessage({ id: "m1", role: "user", content: "first" });
  let aborted = false;
  const run = agent.runAgent({}, {
    onTextMessageContentEvent: () => { if (!aborted) { aborted = true; agent.abortRun(); } },
  });
  await run.catch(() => {});
  out.aborted = aborted;
  // Nothing else is sent: the turn stops by itself (after the stop grace).
  const began = Date.now();
  while ((await conversation()).running) {
    if (Date.now() - began > 30000) break; // the bound: 10× the stop grace, under the model's 60 s idle timeout
    await new Promise((r) => setTimeout(r, 25));
  }
  out.stopped = !(await conversation()).running;
  agent.addMessage({ id: "m2", role: "user", content: "second" });
  let text = "", error = null;
  await agent.runAgent({}, {
    onTextMessageContentEvent: ({ event }) => { text += event.delta; },
    onRunErrorEvent: ({ event }) => { error = event.code; },
  }).catch((e) => { error = error ?? String(e); });
  out.next = { text, error };
}
const ms = await (await fetch(base + "/agentik/conversations/" + chatId + "/messages", { headers })).json();
out.answers = ms.messages.filter((m) => m.type === "assistant_message").map((m) => ({ text: m.content?.[0]?.body ?? "", interrupted: !!m.interrupted }));
console.log(JSON.stringify(out));
