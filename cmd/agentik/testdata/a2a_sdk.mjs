// @a2a-js/sdk's client against agentik's A2A server. Run by a2a_test.go
// with AGENTIK_URL, AGENTIK_KEY and A2A_PHASE (main, rest: the same over
// the HTTP+JSON binding, v03: A2A 0.3's JSON-RPC methods and raw 1.0
// frames, kill_start, kill_resume with A2A_TASK); prints one JSON object
// of what each step saw, for the Go test to check.
import http from "node:http";
import crypto from "node:crypto";
import { Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";

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
// A client with only the REST transport: the factory takes the card's
// HTTP+JSON interface.
const restFactoryFor = (k) =>
  new ClientFactory({ transports: [new RestTransportFactory({ fetchImpl: withKey(k) })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey(k) }) });
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

// failure runs f and names the error it throws ("ok" when none).
const failure = async (f) => {
  try {
    await f();
    return "ok";
  } catch (e) {
    return e.constructor.name + ": " + e.message;
  }
};

const out = {};
const phase = process.env.A2A_PHASE ?? "main";

if (phase === "main") {
  // Card discovery.
  const card = client.agentCard;
  out.card = {
    name: card.name, skills: card.skills.map((s) => s.id), streaming: card.capabilities?.streaming,
    schemes: Object.keys(card.securitySchemes ?? {}), bearer: card.securitySchemes?.bearer?.httpAuthSecurityScheme?.scheme, bearer_v03: card.securitySchemes?.bearer?.type + " " + card.securitySchemes?.bearer?.scheme,
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

  // Push notifications: a receiver gets the settled task, signed with
  // agentik's push key (Standard Webhooks v1a, Ed25519, its public half
  // published as a JWKS), not with the turn.ended webhooks' secret.
  const jwks = await (await fetch(base + "/a2a/push-keys")).json();
  const pushKey = crypto.createPublicKey({ key: jwks.keys[0], format: "jwk" });
  const pushes = [];
  let pushed;
  const gotPush = new Promise((r) => (pushed = r));
  const receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const signedText = `${req.headers["webhook-id"]}.${req.headers["webhook-timestamp"]}.${body}`;
      const secret = Buffer.from(process.env.AGENTIK_WEBHOOK_SECRET.slice(6), "base64");
      const hmac = "v1," + crypto.createHmac("sha256", secret).update(signedText).digest("base64");
      const sig = req.headers["webhook-signature"] ?? "";
      const signed = sig.startsWith("v1a,") && crypto.verify(null, Buffer.from(signedText), pushKey, Buffer.from(sig.slice(4), "base64"));
      const task = JSON.parse(body).task;
      pushes.push({ token: req.headers["x-a2a-notification-token"], signed, webhook_secret: sig.includes(hmac), state: task?.status?.state, text: task?.artifacts?.[0]?.parts?.[0]?.text, id: task?.id });
      res.writeHead(200).end();
      if (task?.status?.state === "TASK_STATE_COMPLETED") pushed();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
  const pt = await client.sendMessage({ message: message([text("hello push")]), configuration: { taskPushNotificationConfig: { url: hook, token: "tok-1" }, returnImmediately: true } });
  await Promise.race([gotPush, new Promise((r) => setTimeout(r, 60000))]);
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
  out.member.get = (await failure(() => member.getTask({ id: t1.id }))).split(":")[0];
  out.member.send = await failure(() => member.sendMessage({ message: message([text("mine now")], { contextId: t1.contextId }) }));
  out.member.list = await failure(() => member.listTasks({ contextId: t1.contextId }));
  out.unknown_agent = (await fetch(base + "/a2a/nobody/.well-known/agent-card.json", { headers: { Authorization: "Bearer " + key } })).status;
} else if (phase === "rest") {
  // The same client API over the HTTP+JSON binding, which the card names.
  const rc = await restFactoryFor(key).createFromUrl(base);
  out.binding = rc.transport.protocolName;
  out.endpoint = rc.transport.endpoint;
  const t1 = await rc.sendMessage({ message: message([text("hello rest")]) });
  out.send = { state: state(t1.status.state), text: artifactText(t1), contextId: t1.contextId, id: t1.id };
  const t2 = await rc.sendMessage({ message: message([text("second rest")], { contextId: t1.contextId }) });
  out.second = { state: state(t2.status.state), text: artifactText(t2), contextId: t2.contextId };
  const got = await rc.getTask({ id: t1.id, historyLength: 1 });
  out.get = { state: state(got.status.state), text: artifactText(got), history: got.history.length };
  const list = await rc.listTasks({ contextId: t1.contextId, includeArtifacts: true });
  out.list = list.tasks.map((t) => ({ id: t.id, state: state(t.status.state), text: artifactText(t) }));
  out.stream = await follow(rc.sendMessageStream({ message: message([text("[[tokens=100 delay=5ms]]")]) }));
  const ac = new AbortController();
  const dropped = await follow(rc.sendMessageStream({ message: message([text("[[tokens=300 delay=3ms]]")]) }, { signal: ac.signal }), { stopAfter: 20, abort: ac });
  const again = await follow(rc.resubscribeTask({ id: dropped.taskId }));
  out.resubscribe = { before: dropped.text, snapshot: again.first, later: again.updates, whole: again.text, states: again.states, kinds: again.kinds.slice(0, 1) };
  const cs = rc.sendMessageStream({ message: message([text("[[tokens=3000 delay=3ms]]")]) });
  const it = cs[Symbol.asyncIterator]();
  let taskId;
  for (;;) {
    const { value } = await it.next();
    if (value.payload.$case === "task") taskId = value.payload.value.id;
    if (value.payload.$case === "artifactUpdate") break;
  }
  const canceled = await rc.cancelTask({ id: taskId });
  const rest = [];
  for (;;) {
    const { value, done } = await it.next();
    if (done) break;
    if (value.payload.$case === "statusUpdate") rest.push(state(value.payload.value.status.state));
  }
  out.cancel = { state: state(canceled.status.state), streamStates: rest, again: await failure(() => rc.cancelTask({ id: taskId })) };
  const w = await rc.sendMessage({ message: message([text('[[tool=everything__echo args={"message":"ping rest"}]]')]) });
  out.approval = { state: state(w.status.state) };
  const done = await rc.sendMessage({ message: message([{ content: { $case: "data", value: { decision: "approve" } } }], { taskId: w.id, contextId: w.contextId }) });
  out.approval.after = { state: state(done.status.state), text: artifactText(done) };
  const made = await rc.createTaskPushNotificationConfig({ taskId: t1.id, url: "http://127.0.0.1:9/hook", token: "tok-r" });
  const listed = await rc.listTaskPushNotificationConfig({ taskId: t1.id });
  const one = await rc.getTaskPushNotificationConfig({ taskId: t1.id, id: made.id });
  await rc.deleteTaskPushNotificationConfig({ taskId: t1.id, id: made.id });
  const after = await rc.listTaskPushNotificationConfig({ taskId: t1.id });
  out.push = { made: !!made.id, listed: listed.configs.length, got: one.token === "tok-r", after: after.configs.length };
  // Bad input, in the REST binding's error shape.
  out.unknown_task = await failure(() => rc.getTask({ id: "0123456789abcdef0123456789abcdef-999999" }));
  const raw = async (method, path, body, k = key) => {
    const res = await fetch(out.endpoint + path, { method, headers: { "Content-Type": "application/json", Authorization: "Bearer " + k }, body });
    const j = await res.json().catch(() => ({}));
    return { status: res.status, code: j.error?.code, grpc: j.error?.status, reason: j.error?.details?.[0]?.reason, message: j.error?.message };
  };
  out.malformed = await raw("POST", "/message:send", "{not json");
  out.no_message = await raw("POST", "/message:send", "{}");
  out.bad_history = await raw("GET", `/tasks/${t1.id}?historyLength=lots`);
  out.no_route = await raw("POST", `/tasks/${t1.id}:teleport`, "{}");
  out.wrong_key = await raw("GET", `/tasks/${t1.id}`, undefined, "wrong");
  out.unknown_agent = (await fetch(base + "/a2a/nobody/message:send", { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer " + key }, body: JSON.stringify({ message: message([text("x")]) }) })).status;
  const member = await restFactoryFor(process.env.AGENTIK_MEMBER_KEY).createFromUrl(base);
  out.member = {
    get: (await failure(() => member.getTask({ id: t1.id }))).split(":")[0],
    send: await failure(() => member.sendMessage({ message: message([text("mine now")], { contextId: t1.contextId }) })),
    cancel: (await failure(() => member.cancelTask({ id: t1.id }))).split(":")[0],
  };
} else if (phase === "v03") {
  // An A2A 0.3 client: the card reads as a 0.3 card too, and the 0.3
  // JSON-RPC methods answer in 0.3's shapes (the SDK's legacy transport
  // turns them into its 1.0 types).
  const raw = await (await fetch(base + "/.well-known/agent-card.json")).json();
  out.card = { version: raw.protocolVersion, url: raw.url, transport: raw.preferredTransport, security: Object.keys(raw.security?.[0] ?? {}) };
  const lc = new Client(new LegacyJsonRpcTransport({ endpoint: raw.url, fetchImpl: withKey(key) }), client.agentCard);
  const t1 = await lc.sendMessage({ message: message([text("hello v03")]) });
  out.send = { state: state(t1.status.state), text: artifactText(t1), contextId: t1.contextId, id: t1.id, history: t1.history.length };
  const t2 = await lc.sendMessage({ message: message([text("second v03")], { contextId: t1.contextId }) });
  out.second = { state: state(t2.status.state), text: artifactText(t2), contextId: t2.contextId };
  const got = await lc.getTask({ id: t1.id });
  out.get = { state: state(got.status.state), text: artifactText(got) };
  out.stream = await follow(lc.sendMessageStream({ message: message([text("[[tokens=100 delay=5ms]]")]) }));
  const ac = new AbortController();
  const dropped = await follow(lc.sendMessageStream({ message: message([text("[[tokens=300 delay=3ms]]")]) }, { signal: ac.signal }), { stopAfter: 20, abort: ac });
  const again = await follow(lc.resubscribeTask({ id: dropped.taskId }));
  out.resubscribe = { before: dropped.text, snapshot: again.first, later: again.updates, whole: again.text, states: again.states };
  const cs = lc.sendMessageStream({ message: message([text("[[tokens=3000 delay=3ms]]")]) });
  const it = cs[Symbol.asyncIterator]();
  let taskId;
  for (;;) {
    const { value } = await it.next();
    if (value.payload.$case === "task") taskId = value.payload.value.id;
    if (value.payload.$case === "artifactUpdate") break;
  }
  const canceled = await lc.cancelTask({ id: taskId });
  for (;;) {
    const { done } = await it.next();
    if (done) break;
  }
  out.cancel = { state: state(canceled.status.state), again: await failure(() => lc.cancelTask({ id: taskId })) };
  const w = await lc.sendMessage({ message: message([text('[[tool=everything__echo args={"message":"ping v03"}]]')]) });
  out.approval = { state: state(w.status.state), waiting: w.status.message?.parts.find((p) => p.content?.$case === "data")?.content.value?.waiting?.length };
  const done = await lc.sendMessage({ message: message([{ content: { $case: "data", value: { decision: "approve" } } }], { taskId: w.id, contextId: w.contextId }) });
  out.approval.after = { state: state(done.status.state), text: artifactText(done) };
  const made = await lc.createTaskPushNotificationConfig({ taskId: t1.id, id: "", url: "http://127.0.0.1:9/hook", token: "tok-3" });
  const listed = await lc.listTaskPushNotificationConfig({ taskId: t1.id });
  const one = await lc.getTaskPushNotificationConfig({ taskId: t1.id, id: made.id });
  await lc.deleteTaskPushNotificationConfig({ taskId: t1.id, id: made.id });
  const after = await lc.listTaskPushNotificationConfig({ taskId: t1.id });
  out.push = { made: !!made.id, task: made.taskId === t1.id, listed: listed.configs.length, got: one.token === "tok-3", after: after.configs.length };
  out.unknown_task = await failure(() => lc.getTask({ id: "0123456789abcdef0123456789abcdef-999999" }));
  // The wire itself: 0.3 shapes by the 0.3 names, 1.0 shapes by 1.0's.
  const rpc = async (method, params) => {
    const res = await fetch(base + "/a2a/agentik", { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer " + key }, body: JSON.stringify({ jsonrpc: "2.0", id: method, method, params }) });
    if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
      const frames = (await res.text()).split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)));
      return { stream: frames };
    }
    return res.json();
  };
  const v03 = await rpc("message/send", { message: { kind: "message", messageId: `raw-${process.pid}`, role: "user", parts: [{ kind: "text", text: "raw v03" }] } });
  out.raw03 = { kind: v03.result?.kind, state: v03.result?.status?.state, text: v03.result?.artifacts?.[0]?.parts?.[0]?.text, partKind: v03.result?.artifacts?.[0]?.parts?.[0]?.kind };
  const s03 = await rpc("message/stream", { message: { kind: "message", messageId: `raw-s-${process.pid}`, role: "user", parts: [{ kind: "text", text: "[[tokens=5]]" }] } });
  const last = s03.stream.at(-1).result;
  out.raw03.streamKinds = [...new Set(s03.stream.map((f) => f.result?.kind))];
  out.raw03.final = last.kind === "status-update" && last.final === true && last.status.state === "completed";
  out.raw03.list = (await rpc("tasks/list", {})).error?.code;
  // One raw frame per A2A 1.0 method.
  const tid = t1.id;
  const v1 = {};
  const sent = await rpc("SendMessage", { message: { messageId: `raw1-${process.pid}`, role: "ROLE_USER", parts: [{ text: "raw v1" }] } });
  v1.SendMessage = sent.result?.task?.status?.state;
  const streamed = await rpc("SendStreamingMessage", { message: { messageId: `raw1-s-${process.pid}`, role: "ROLE_USER", parts: [{ text: "[[tokens=5]]" }] } });
  v1.SendStreamingMessage = streamed.stream?.at(-1)?.result?.statusUpdate?.status?.state;
  out.v1StreamFrames = streamed.stream ?? streamed; // for the test's message when the state is not there
  v1.GetTask = (await rpc("GetTask", { id: tid })).result?.status?.state;
  v1.ListTasks = (await rpc("ListTasks", { contextId: t1.contextId })).result?.tasks?.length;
  v1.CancelTask = (await rpc("CancelTask", { id: tid })).error?.code;
  v1.SubscribeToTask = (await rpc("SubscribeToTask", { id: tid })).stream?.[0]?.result?.task?.id === tid;
  const pc = (await rpc("CreateTaskPushNotificationConfig", { taskId: tid, url: "http://127.0.0.1:9/x" })).result;
  v1.CreateTaskPushNotificationConfig = !!pc?.id;
  v1.GetTaskPushNotificationConfig = (await rpc("GetTaskPushNotificationConfig", { taskId: tid, id: pc?.id })).result?.url;
  v1.ListTaskPushNotificationConfigs = (await rpc("ListTaskPushNotificationConfigs", { taskId: tid })).result?.configs?.length;
  v1.DeleteTaskPushNotificationConfig = "result" in (await rpc("DeleteTaskPushNotificationConfig", { taskId: tid, id: pc?.id }));
  v1.GetExtendedAgentCard = (await rpc("GetExtendedAgentCard", {})).error?.code;
  v1.unknown = (await rpc("tasks/teleport", {})).error?.code;
  out.v1 = v1;
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
