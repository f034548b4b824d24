// A document in a user message through every client, against the real
// binary: the official openai SDK (chat.completions file parts by
// file_data and by file_id, responses input_file), the AI SDK's
// DefaultChatTransport (a file UI part), @a2a-js/sdk (a raw file part).
// Run by fileparts_test.go with AGENTIK_URL, AGENTIK_KEY (ann's) and
// OTHER_KEY (bob's); argv: a PDF the Go test made. Prints one JSON
// object of what each step saw; the Go test checks what the model read.
import fs from "node:fs";
import OpenAI from "openai";
import { DefaultChatTransport, readUIMessageStream } from "ai";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";

const [pdfPath] = process.argv.slice(2);
const base = process.env.AGENTIK_URL;
const key = process.env.AGENTIK_KEY;
const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
const other = new OpenAI({ baseURL: base + "/v1", apiKey: process.env.OTHER_KEY, maxRetries: 0 });
const b64 = (s) => Buffer.from(s).toString("base64");
const out = {};
const failure = async (f) => {
  try {
    await f();
    return { status: 0 };
  } catch (e) {
    return { status: e.status ?? -1, code: e.code ?? e.error?.code, message: e.message };
  }
};
const fileCount = async (c) => {
  let n = 0;
  for await (const _ of c.files.list()) n++;
  return n;
};

// 1. Chat completions, stateless, with file_data (a data: URL).
const chat1 = await client.chat.completions.create({
  model: "fake",
  messages: [{ role: "user", content: [
    { type: "text", text: "What does the note say?" },
    { type: "file", file: { filename: "chat-note.txt", file_data: "data:text/plain;base64," + b64("The chat secret is AMBER-17.") } },
  ] }],
});
out.chat_data = chat1.choices[0].message.content;

// 2. Chat completions with the file_id of a PDF uploaded by files.create.
const pdf = await client.files.create({ file: fs.createReadStream(pdfPath), purpose: "user_data" });
out.pdf_id = pdf.id;
const chat2 = await client.chat.completions.create({
  model: "fake",
  messages: [{ role: "user", content: [{ type: "text", text: "Read the PDF" }, { type: "file", file: { file_id: pdf.id } }] }],
});
out.chat_id = chat2.choices[0].message.content;

// 3. Responses with input_file (file_data), stored: its input items keep
// the file.
const resp = await client.responses.create({
  model: "fake",
  input: [{ role: "user", content: [
    { type: "input_text", text: "Read the memo" },
    { type: "input_file", filename: "memo.md", file_data: "data:text/markdown;base64," + b64("# Memo\n\nThe memo secret is RESP-9.") },
  ] }],
});
out.resp_status = resp.status;
const items = [];
for await (const it of client.responses.inputItems.list(resp.id)) items.push(it);
out.resp_items = items.map((it) => (it.content ?? []).map((c) => ({ type: c.type, file_id: c.file_id, filename: c.filename })));
// ... and with the PDF's file_id.
const resp2 = await client.responses.create({ model: "fake", input: [{ role: "user", content: [{ type: "input_text", text: "Again" }, { type: "input_file", file_id: pdf.id }] }] });
out.resp_id_status = resp2.status;

// 4. Refusals: nothing is stored by any of them.
const before = await fileCount(client);
out.refused = {
  chat_other_file: await failure(() => other.chat.completions.create({ model: "fake", messages: [{ role: "user", content: [{ type: "file", file: { file_id: pdf.id } }] }] })),
  resp_other_file: await failure(() => other.responses.create({ model: "fake", input: [{ role: "user", content: [{ type: "input_file", file_id: pdf.id }] }] })),
  bad_base64: await failure(() => client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: [{ type: "file", file: { filename: "x.txt", file_data: "data:text/plain;base64,@@not base64@@" } }] }] })),
  unsupported: await failure(() => client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: [{ type: "text", text: "hi" }, { type: "file", file: { filename: "song.mp3", file_data: "data:audio/mpeg;base64," + Buffer.from([0xff, 0xfb, 0x90, 0x00, 1, 2, 3]).toString("base64") } }] }] })),
  file_url: await failure(() => client.responses.create({ model: "fake", input: [{ role: "user", content: [{ type: "input_file", file_url: "http://127.0.0.1/secret.pdf" }] }] })),
};
out.files_before = before;
out.files_after = await fileCount(client);

// 5. The AI SDK: a file UI part with a non-image media type.
const transport = new DefaultChatTransport({ api: base + "/agentik/ai-sdk/chat", headers: { Authorization: "Bearer " + key } });
const stream = await transport.sendMessages({
  chatId: "fileparts-chat", trigger: "submit-message", abortSignal: undefined,
  messages: [{ id: "u1", role: "user", parts: [
    { type: "text", text: "Read the attachment" },
    { type: "file", mediaType: "text/markdown", filename: "ai.md", url: "data:text/markdown;base64," + b64("The AI SDK secret is JADE-3.") },
  ] }],
});
let last;
for await (const m of readUIMessageStream({ stream, terminateOnError: true })) last = m;
out.aisdk = last.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

// 6. A2A: a file part with the document's bytes.
const withKey = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", "Bearer " + key);
  return fetch(url, { ...init, headers });
};
const a2a = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey }),
})).createFromUrl(base);
const task = await a2a.sendMessage({ message: { messageId: "fp-" + process.pid, role: 1, parts: [
  { content: { $case: "text", value: "Read the file" } },
  { content: { $case: "raw", value: Buffer.from("The A2A secret is ONYX-5.") }, filename: "a2a.txt", mediaType: "text/plain" },
] } });
out.a2a_state = task.status?.state;
out.a2a_history = (task.history ?? []).flatMap((m) => m.parts).map((p) => ({ case: p.content?.$case, filename: p.filename, mediaType: p.mediaType }));

console.log(JSON.stringify(out));
