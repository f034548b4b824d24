// A remote A2A agent built with @a2a-js/sdk's server (express, JSON-RPC),
// for agentik's agents to delegate to. Run by a2a_remote_test.go with
// REMOTE_TOKEN (the bearer token it requires); prints {"port": N} once it
// listens. Its executor waits for GET /go, then streams "remote answer to
// <message> w1 … w30" word by word as artifact updates. The first
// streaming send's connection is cut after a few events (a dropped
// stream), while the task runs on; GET /stats tells what it served.
// With REMOTE_PAUSE=N it stops after N words until GET /go2 (a test
// kills agentik meanwhile).
import express from "express";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { jsonRpcHandler, agentCardHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { TaskState } from "@a2a-js/sdk";

const token = process.env.REMOTE_TOKEN;
const stats = { sends: 0, subscribes: 0, cancels: 0, refused: 0, drops: 0, executed: 0 };
let release, release2;
const go = new Promise((r) => (release = r));
const go2 = new Promise((r) => (release2 = r));
const pauseAt = Number(process.env.REMOTE_PAUSE ?? 0);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Remote {
  async execute(ctx, bus) {
    stats.executed++;
    const said = ctx.userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
    const { taskId, contextId } = ctx;
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING }, artifacts: [], history: [ctx.userMessage] }));
    await go;
    const words = `remote answer to ${said} ${Array.from({ length: 30 }, (_, i) => "w" + (i + 1)).join(" ")}`.split(" ");
    for (let i = 0; i < words.length; i++) {
      if (pauseAt && i === pauseAt) await go2;
      await sleep(10);
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: "answer", name: "answer", parts: [{ content: { $case: "text", value: (i ? " " : "") + words[i] } }] }, append: i > 0, lastChunk: false }));
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED } }));
    bus.finished();
  }
  async cancelTask(taskId, bus) {
    stats.cancels++;
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: "", status: { state: TaskState.TASK_STATE_CANCELED } }));
    bus.finished();
  }
}

const app = express();
app.get("/go", (req, res) => {
  release();
  res.json({ ok: true });
});
app.get("/go2", (req, res) => {
  release2();
  res.json({ ok: true });
});
app.get("/stats", (req, res) => res.json(stats));
app.use((req, res, next) => {
  if (req.headers.authorization !== "Bearer " + token) {
    stats.refused++;
    return res.status(401).json({ error: "a bearer token is required" });
  }
  next();
});
app.use(express.json());
let dropped = false;
app.use((req, res, next) => {
  const method = req.body?.method;
  if (method === "SendStreamingMessage") stats.sends++;
  if (method === "SubscribeToTask") stats.subscribes++;
  if (method === "SendStreamingMessage" && !dropped) {
    // Cut this stream after its fourth event: the task goes on.
    dropped = true;
    let events = 0;
    const write = res.write.bind(res);
    res.write = (chunk, ...rest) => {
      const ok = write(chunk, ...rest);
      if (String(chunk).includes("data:") && ++events === 4) {
        stats.drops++;
        res.socket.destroy();
      }
      return ok;
    };
  }
  next();
});
const card = {
  name: "Remote", description: "an agent of another runtime", version: "1.0.0",
  supportedInterfaces: [{ url: "" /* once it listens */, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {}, securityRequirements: [], defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "remote", name: "Remote", description: "answers", tags: ["remote"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Remote());
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: { getAgentCard: async () => card } }));
app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(0, "127.0.0.1", () => {
  card.supportedInterfaces[0].url = `http://127.0.0.1:${server.address().port}/a2a/jsonrpc`;
  console.log(JSON.stringify({ port: server.address().port }));
});
