// The mainstream helpers over agentik's /v1/chat/completions: the AI SDK's
// generateObject through @ai-sdk/openai's chat model, and @openai/agents
// on a chat-completions model (reasoning, structured outputType), run and
// streamed. Run by openai_test.go with AGENTIK_URL and AGENTIK_KEY; prints
// one JSON object for the Go test to check.
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject } from "ai";
import { Agent, run, OpenAIChatCompletionsModel, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

const baseURL = process.env.AGENTIK_URL + "/v1";
const apiKey = process.env.AGENTIK_KEY;
const out = {};

// AI SDK: generateObject with a zod schema on the chat model.
const provider = createOpenAI({ baseURL, apiKey });
const { object } = await generateObject({
  model: provider.chat("fake"),
  schema: z.object({ city: z.string(), celsius: z.number() }),
  prompt: '[[text={"city":"Oslo","celsius":-3}]] ai sdk object',
  maxRetries: 0,
});
out.ai_sdk_object = object;

// Agents SDK on chat completions: reasoning, in a run and a streamed run.
setTracingDisabled(true);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const model = new OpenAIChatCompletionsModel(client, "fake");
const reasoningOf = (items) =>
  items.filter((i) => i.type === "reasoning_item").map((i) => (i.rawItem.rawContent ?? []).map((c) => c.text).join("")).join("");
const thinker = new Agent({ name: "thinker", instructions: "think first", model });
const ran = await run(thinker, "[[reasoning]] agents run");
out.agents_run = { final: ran.finalOutput, reasoning: reasoningOf(ran.newItems) };
const streamed = await run(thinker, "[[reasoning]] agents stream", { stream: true });
for await (const _ of streamed);
await streamed.completed;
out.agents_stream = { final: streamed.finalOutput, reasoning: reasoningOf(streamed.newItems) };

// Agents SDK: a structured outputType (json_schema on chat completions).
const typed = new Agent({ name: "typed", instructions: "answer in JSON", model, outputType: z.object({ answer: z.string() }) });
const typedRun = await run(typed, '[[text={"answer":"forty-two"}]] agents typed');
out.agents_typed = typedRun.finalOutput;

console.log(JSON.stringify(out));
