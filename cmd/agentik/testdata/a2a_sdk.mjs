// @a2a-js/sdk's client against agentik's A2A server. Run by a2a_test.go
// with AGENTIK_URL, AGENTIK_KEY and A2A_PHASE (main, kill_start,
// kill_resume with A2A_TASK); prints one JSON object of what each step
// saw, for the Go test to check.
import http from "node:http";
import crypto from "node:crypto";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";

const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const withKey = (k) => (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", "Bearer " + k);
  return fetch(url, { ...init, headers });
};
const factoryFor = (k) =>
  new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: withKey(k) })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey(k) }),
  }));
const client = await factoryFor(key).createFromUrl(base);

let n = 0;
const text = (s) => ({ content: { $case: "text", value: s } });
const message = (parts, extra = {}) => ({ messageId: `m-${process.pid}-${++n}`, role: 1, parts, ...extra });
const artifactText = (task) => (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const state = (s) => ["UNSPECIFIED", "SUBMITTED", "WORKING", "COMPLETED", "FAILED", "CANCELED", "INPUT_REQUIRED", "REJECTED", "AUTH_REQUIRED"][s] ?? String(s);
const statusText = (st) => (st?.message?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

// follow reads a stream into {kinds, text, states, first}; stopAfter
// artifact updates, it aborts the request (a client that drops).
async function follow(gen, { stopAfter = Infinity, abort } = {}) {
  const out = { kinds: [], text: "", updates: "", states: [], artifacts: 0 };
  for await (const ev of gen) {
    const p = ev.payload;
    out.kinds.push(p.$case);
    if (p.$case === "task") {
      out.first ??= { id: p.value.id, contextId: p.value.contextId, state: state(p.value.status?.state), text: artifactText(p.value) };
      out.taskId = p.value.id;
      out.text = artifactText(p.value); // the answer so far: later updates append to it
    } else if (p.$case === "artifactUpdate") {
      const t = p.value.artifact.parts.map((x) => (x.content?.$case === "text" ? x.content.value : "")).join("");
      out.text = p.value.append ? out.text + t : t;
      out.updates += t;
      out.artifacts++;
      if (out.artifacts >= stopAfter) {
        abort?.abort();
        break;
      }
    } else if (p.$case === "statusUpdate") {
      out.states.push(state(p.value.status.state));
    }
  }
  return out;
}

const out = {};
const phase = process.env.A2A_PHASE ?? "main";

if (phase === "main") {
  // Card discovery.
  const card = client.agentCard;
  out.card = {
    name: card.name, skills: card.skills.map((s) => s.id), streaming: card.capabilities?.streaming,
    schemes: Object.keys(card.securitySchemes ?? {}), bearer: card.securitySchemes?.bearer?.scheme?.value?.scheme,
    url: card.supportedInterfaces[0]?.url, binding: card.supportedInterfaces[0]?.protocolBinding,
  };
  const slugClient = await factoryFor(key).createFromUrl(base + "/a2a/agentik/");
  out.card.slug_name = slugClient.agentCard.name;

  // A blocking send, and a second message in the same context.
  const t1 = await client.sendMessage({ message: message([text("hello a2a")]) });
  out.send = { state: state(t1.status.state), text: artifactText(t1), contextId: t1.contextId, id: t1.id, history: t1.history.length };
  const t2 = await client.sendMessage({ message: message([text("second one")], { contextId: t1.contextId }) });
  out.second = { state: state(t2.status.state), text: artifactText(t2), contextId: t2.contextId, id: t2.id };
  const got = await client.getTask({ id: t1.id });
  out.get = { state: state(got.status.state), text: artifactText(got) };
  const list = await client.listTasks({ contextId: t1.contextId });
  out.list = list.tasks.map((t) => ({ id: t.id, state: state(t.status.state) }));

  // A streaming send.
  out.stream = await follow(client.sendMessageStream({ message: message([text("[[tokens=30]]")]) }));

  // A drop mid-stream, then a resubscription: the snapshot and the later
  // updates are the whole answer, once.
  const ac = new AbortController();
  const dropped = await follow(client.sendMessageStream({ message: message([text("[[tokens=300 delay=3ms]]")]) }, { signal: ac.signal }), { stopAfter: 20, abort: ac });
  const again = await follow(client.resubscribeTask({ id: dropped.taskId }));
  out.resubscribe = { before: dropped.text, snapshot: again.first, later: again.updates, whole: again.text, states: again.states, kinds: again.kinds.slice(0, 1) };

  // Cancel a running task: the stream ends canceled.
  const cs = client.sendMessageStream({ message: message([text("[[tokens=3000 delay=3ms]]")]) });
  const it = cs[Symbol.asyncIterator]();
  let taskId;
  for (;;) {
    const { value } = await it.next();
    if (value.payload.$case === "task") taskId = value.payload.value.id;
    if (value.payload.$case === "artifactUpdate") break;
  }
  const canceled = await client.cancelTask({ id: taskId });
  const rest = [];
  for (;;) {
    const { value, done } = await it.next();
    if (done) break;
    if (value.payload.$case === "statusUpdate") rest.push(state(value.payload.value.status.state));
  }
  out.cancel = { state: state(canceled.status.state), streamStates: rest };
  try {
    await client.cancelTask({ id: taskId });
  } catch (e) {
    out.cancel.again = e.constructor.name;
  }

  // A tool call that needs approval: input-required, approved over A2A.
  const w = await client.sendMessage({ message: message([text('[[tool=everything__echo args={"message":"ping a2a"}]]')]) });
  out.approval = { state: state(w.status.state), waiting: w.status.message?.parts.find((p) => p.content?.$case === "data")?.content.value };
  const done = await client.sendMessage({ message: message([{ content: { $case: "data", value: { decision: "approve" } } }], { taskId: w.id, contextId: w.contextId }) });
  out.approval.after = { state: state(done.status.state), text: artifactText(done), id: done.id === w.id };
  try {
    await client.sendMessage({ message: message([{ content: { $case: "data", value: { decision: "approve" } } }], { taskId: w.id }) });
  } catch (e) {
    out.approval.again = e.constructor.name;
  }

  // Push notifications: a receiver gets the settled task, signed.
  const pushes = [];
  let pushed;
  const gotPush = new Promise((r) => (pushed = r));
  const receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const secret = Buffer.from(process.env.AGENTIK_WEBHOOK_SECRET.slice(6), "base64");
      const want = "v1," + crypto.createHmac("sha256", secret).update(`${req.headers["webhook-id"]}.${req.headers["webhook-timestamp"]}.${body}`).digest("base64");
      const task = JSON.parse(body).task;
      pushes.push({ token: req.headers["x-a2a-notification-token"], signed: req.headers["webhook-signature"] === want, state: task?.status?.state, text: task?.artifacts?.[0]?.parts?.[0]?.text, id: task?.id });
      res.writeHead(200).end();
      if (task?.status?.state === "TASK_STATE_COMPLETED") pushed();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
  const pt = await client.sendMessage({ message: message([text("hello push")]), configuration: { taskPushNotificationConfig: { url: hook, token: "tok-1" }, returnImmediately: true } });
  await Promise.race([gotPush, new Promise((r) => setTimeout(r, 30000))]);
  receiver.close();
  out.push = { task: pt.id, pushes };
  const made = await client.createTaskPushNotificationConfig({ taskId: t1.id, url: hook, token: "tok-2" });
  const listed = await client.listTaskPushNotificationConfig({ taskId: t1.id });
  const one = await client.getTaskPushNotificationConfig({ taskId: t1.id, id: made.id });
  await client.deleteTaskPushNotificationConfig({ taskId: t1.id, id: made.id });
  const after = await client.listTaskPushNotificationConfig({ taskId: t1.id });
  out.push.configs = { made: !!made.id, listed: listed.configs.length, got: one.url === hook, after: after.configs.length };
  try {
    await client.createTaskPushNotificationConfig({ taskId: t1.id, url: "ftp://nope" });
  } catch (e) {
    out.push.bad_url = e.constructor.name;
  }

  // Bad input.
  try {
    await client.getTask({ id: "0123456789abcdef0123456789abcdef-999999" });
  } catch (e) {
    out.unknown_task = e.constructor.name;
  }
  const rpc = async (body) => (await fetch(base + "/a2a/agentik", { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer " + key }, body })).json();
  out.unknown_method = (await rpc(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "message/teleport", params: {} }))).error?.code;
  out.malformed = (await rpc("{not json")).error?.code;
  out.no_message = (await rpc(JSON.stringify({ jsonrpc: "2.0", id: 8, method: "SendMessage", params: {} }))).error?.code;
  const wrong = await fetch(base + "/a2a/agentik", { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer wrong" }, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "GetTask", params: { id: t1.id } }) });
  out.wrong_key = wrong.status;
  const open = await fetch(base + "/.well-known/agent-card.json");
  out.public_card = open.status;
  // Another user sees none of it.
  const member = await factoryFor(process.env.AGENTIK_MEMBER_KEY).createFromUrl(base + "/a2a/agentik/");
  out.member = { card: member.agentCard.name };
  const failure = async (f) => {
    try {
      await f();
      return "ok";
    } catch (e) {
      return e.constructor.name + ": " + e.message;
    }
  };
  out.member.get = (await failure(() => member.getTask({ id: t1.id }))).split(":")[0];
  out.member.send = await failure(() => member.sendMessage({ message: message([text("mine now")], { contextId: t1.contextId }) }));
  out.member.list = await failure(() => member.listTasks({ contextId: t1.contextId }));
  out.unknown_agent = (await fetch(base + "/a2a/nobody/.well-known/agent-card.json", { headers: { Authorization: "Bearer " + key } })).status;
} else if (phase === "kill_start") {
  // Read part of a long answer, then leave; the Go test kills agentik.
  const ac = new AbortController();
  const seen = await follow(client.sendMessageStream({ message: message([text("[[tokens=3000 delay=3ms]]")]) }, { signal: ac.signal }), { stopAfter: 30, abort: ac });
  out.task = seen.taskId;
  out.before = seen.text;
} else if (phase === "kill_resume") {
  const again = await follow(client.resubscribeTask({ id: process.env.A2A_TASK }));
  const got = await client.getTask({ id: process.env.A2A_TASK });
  out.snapshot = again.first;
  out.later = again.updates;
  out.get = { state: state(got.status.state), text: artifactText(got), error: statusText(got.status) };
  // The context goes on after the restart.
  const next = await client.sendMessage({ message: message([text("after restart")], { contextId: got.contextId }) });
  out.next = { state: state(next.status.state), text: artifactText(next) };
}
console.log(JSON.stringify(out));
process.exit(0);
