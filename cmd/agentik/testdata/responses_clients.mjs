// Two clients that speak the Responses API by default, against agentik:
// the OpenAI Agents SDK (@openai/agents) running an agent with a function
// tool, and the AI SDK's default openai(model) (@ai-sdk/openai) with
// generateText and streamText. Run by responses_test.go with AGENTIK_URL
// and AGENTIK_KEY; prints one JSON object of what each saw.
import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI } from "@openai/agents";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";
import { z } from "zod";

const baseURL = process.env.AGENTIK_URL + "/v1", apiKey = process.env.AGENTIK_KEY || "unused";
const out = {};

// @openai/agents: nothing configured but the client's base URL.
setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey, maxRetries: 0 }));
setOpenAIAPI("responses"); // its default, said for the reader
let ran = 0;
const getTime = tool({ name: "get_time", description: "the time", parameters: z.object({}), execute: async () => { ran++; return "noon"; } });
const clock = new Agent({ name: "clock", instructions: "You tell the time.", model: "fake", tools: [getTime] });
const result = await run(clock, "[[tool=get_time]]");
out.agents = { final: result.finalOutput, ran, items: result.newItems.map((i) => i.type) };
const streamed = await run(clock, "hello agents", { stream: true });
let text = "";
for await (const t of streamed.toTextStream()) text += t;
await streamed.completed;
out.agents.streamed = text;

// @ai-sdk/openai: openai(model) is its Responses model.
const openai = createOpenAI({ baseURL, apiKey });
const g = await generateText({ model: openai("fake"), prompt: "hello ai sdk" });
out.generate = { text: g.text, finish: g.finishReason, output_tokens: g.usage.outputTokens };
const s = streamText({ model: openai("fake"), prompt: "[[tokens=12]]" });
let st = "";
for await (const t of s.textStream) st += t;
out.stream = { text: st, finish: await s.finishReason };
// The AI SDK's own retry (it reads no x-should-retry) of a chat
// completion on a stored conversation whose turn fails: the failed turn is
// answered again, not the message stored once per attempt.
const headers = { Authorization: "Bearer " + apiKey, "content-type": "application/json" };
const conv = await (await fetch(process.env.AGENTIK_URL + "/agentik/conversations", { method: "POST", headers, body: "{}" })).json();
const chat = createOpenAI({ baseURL, apiKey, headers: { "X-Agentik-Conversation": conv.id } }).chat("fake");
let attempts = null;
try {
  await generateText({ model: chat, prompt: "[[error=500]]", maxRetries: 1 });
} catch (e) {
  attempts = e.errors?.length ?? 1; // RetryError lists each attempt's error
}
const all = await (await fetch(process.env.AGENTIK_URL + "/agentik/conversations/" + conv.id + "/messages?branch=all", { headers })).json();
out.retried = { attempts, users: all.messages.filter((m) => m.type === "user_message").length };
// A failed Response: the SDK validates its error object (OpenAI's type
// field included) and reports agentik's message.
try {
  await generateText({ model: openai("fake"), prompt: "[[error=400]]", maxRetries: 0 });
  out.failed = null;
} catch (e) {
  out.failed = { name: e.name, message: e.message };
}

console.log(JSON.stringify(out));
