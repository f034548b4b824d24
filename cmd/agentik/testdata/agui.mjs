// AG-UI's own client (npm package @ag-ui/client, HttpAgent) against
// agentik's POST /agentik/ag-ui. Run by agui_test.go with AGENTIK_URL,
// AGENTIK_KEY and AGENTIK_THREAD; prints one JSON object of what each run
// saw, for the Go test to check.
import { HttpAgent } from "@ag-ui/client";

const url = process.env.AGENTIK_URL + "/agentik/ag-ui";
const headers = { Authorization: "Bearer " + process.env.AGENTIK_KEY };
const out = {};
let n = 0;

// run runs the agent once and reports what its events said.
async function run(agent, params = {}) {
  const seen = { types: [], text: "", reasoning: "", tools: [], results: [], error: null, outcome: null, interrupts: [], snapshot: null };
  try {
    const res = await agent.runAgent(params, {
      onEvent({ event }) { seen.types.push(event.type); },
      onTextMessageContentEvent({ event }) { seen.text += event.delta; },
      onReasoningMessageContentEvent({ event }) { seen.reasoning += event.delta; },
      onToolCallStartEvent({ event }) { seen.tools.push(event.toolCallName); },
      onToolCallResultEvent({ event }) { seen.results.push(event.content); },
      onMessagesSnapshotEvent({ event }) { seen.snapshot = event.messages.map((m) => m.role); },
      onRunErrorEvent({ event }) { seen.error = { message: event.message, code: event.code }; },
      onRunFinishedEvent(e) { seen.outcome = e.outcome; seen.interrupts = e.interrupts ?? []; },
    });
    seen.new_messages = res.newMessages.length;
  } catch (e) {
    seen.thrown = String(e?.message ?? e);
  }
  seen.messages = agent.messages.map((m) => m.role);
  seen.last_answer = agent.messages.filter((m) => m.role === "assistant").at(-1)?.content ?? null;
  return seen;
}
const say = (agent, content) => agent.addMessage({ id: "msg-" + ++n, role: "user", content });

// 1. A run with reasoning; 2. a second run on the thread; 3. a server-side tool.
const agent = new HttpAgent({ url, headers, threadId: process.env.AGENTIK_THREAD });
say(agent, "[[reasoning]] hello ag-ui");
out.first = await run(agent);
say(agent, "second run");
out.second = await run(agent);
say(agent, '[[tool=everything__echo args={"message":"ping from ag-ui"}]]');
out.tool = await run(agent);

// 3b. A drop mid-run, then a run without new input replays the turn whole
// (or, if it ended meanwhile, its snapshot holds the whole answer).
const dropped = new HttpAgent({ url, headers, threadId: process.env.AGENTIK_THREAD + "-drop" });
say(dropped, "[[tokens=150]] [[delay=20ms]]");
let deltas = 0;
const abort = new AbortController();
await dropped.runAgent({ abortController: abort }, {
  onTextMessageContentEvent() { if (++deltas === 3) abort.abort(); },
}).catch(() => {});
out.dropped_after = deltas;
out.replayed = await run(dropped);

// 4. A tool that waits for approval: an interrupt, resumed.
const waiting = new HttpAgent({ url, headers, threadId: process.env.AGENTIK_THREAD + "-approval" });
say(waiting, '[[tool=everything__get-sum args={"a":2,"b":3}]]');
out.interrupted = await run(waiting);
out.pending = waiting.pendingInterrupts.map((i) => ({ id: i.id, reason: i.reason, tool_call_id: i.toolCallId }));
// A new message while it waits is refused by the client itself (rule 4).
say(waiting, "meanwhile");
out.blocked = await run(waiting);
waiting.messages.pop();
out.resumed = await run(waiting, { resume: waiting.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })) });

// 5. Bad input: RUN_ERROR, nothing stored.
async function raw(body) {
  const res = await fetch(url, { method: "POST", headers: { ...headers, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(body) });
  const text = await res.text();
  const events = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  return { status: res.status, events };
}
async function stored(id) {
  return (await fetch(process.env.AGENTIK_URL + "/agentik/conversations/" + id, { headers })).status;
}
out.bad = {
  shape: await raw({ threadId: "bad-shape", runId: "r1", messages: "hello" }),
  no_thread: await raw({ runId: "r1", messages: [] }),
  unknown_resume: await raw({ threadId: "bad-resume", runId: "r1", messages: [], resume: [{ interruptId: "x", status: "resolved", payload: { approved: true } }] }),
  bad_payload: await raw({ threadId: process.env.AGENTIK_THREAD, runId: "r1", messages: [], resume: [{ interruptId: "x", status: "resolved", payload: { yes: 1 } }] }),
  blank: await raw({ threadId: "bad-blank", runId: "r1", messages: [{ id: "b1", role: "user", content: "   " }] }),
};
out.stored = { shape: await stored("bad-shape"), resume: await stored("bad-resume"), blank: await stored("bad-blank") };
// The client sees a RUN_ERROR as the run's error.
const lost = new HttpAgent({ url, headers, threadId: "bad thread id" });
say(lost, "hi");
out.client_error = await run(lost);

console.log(JSON.stringify(out));
