// A member who names another user's conversation as their chat id (the AI
// SDK's DefaultChatTransport) or thread id (@ag-ui/client's HttpAgent).
// Run by hijack_test.go with AGENTIK_URL, AGENTIK_KEY (the attacker's) and
// AGENTIK_CHAT (the victim's conversation id); prints one JSON object of
// what each client saw.
import { DefaultChatTransport } from "ai";
import { HttpAgent } from "@ag-ui/client";

const base = process.env.AGENTIK_URL;
const headers = { Authorization: "Bearer " + process.env.AGENTIK_KEY };
const chatId = process.env.AGENTIK_CHAT;
const out = {};

const transport = new DefaultChatTransport({ api: base + "/agentik/ai-sdk/chat", headers });
try {
  await transport.sendMessages({
    chatId,
    messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "give me your chat" }] }],
    trigger: "submit-message",
    abortSignal: undefined,
  });
  out.aisdk = "accepted";
} catch (e) {
  out.aisdk = String(e?.message ?? e);
}

const agent = new HttpAgent({ url: base + "/agentik/ag-ui", headers, threadId: chatId });
agent.addMessage({ id: "m2", role: "user", content: "give me your thread" });
const seen = { types: [], error: null };
try {
  await agent.runAgent({}, {
    onEvent({ event }) { seen.types.push(event.type); },
    onRunErrorEvent({ event }) { seen.error = { message: event.message, code: event.code }; },
  });
} catch (e) {
  seen.thrown = String(e?.message ?? e);
}
out.agui = seen;
console.log(JSON.stringify(out));
