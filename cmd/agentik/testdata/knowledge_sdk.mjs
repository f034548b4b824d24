// The official OpenAI Node SDK against agentik's Files, Vector Stores and
// Responses file_search. Run by knowledge_sdk_test.go with AGENTIK_URL,
// AGENTIK_KEY (ann's) and OTHER_KEY (bob's); argv: the PDF and the DOCX
// the Go test made. Prints one JSON object of what each step saw.
import fs from "node:fs";
import OpenAI from "openai";

const [pdfPath, docxPath] = process.argv.slice(2);
const baseURL = process.env.AGENTIK_URL + "/v1";
const client = new OpenAI({ baseURL, apiKey: process.env.AGENTIK_KEY, maxRetries: 0 });
const other = new OpenAI({ baseURL, apiKey: process.env.OTHER_KEY, maxRetries: 0 });
const out = {};

// files.create with a PDF and a DOCX.
const pdf = await client.files.create({ file: fs.createReadStream(pdfPath), purpose: "assistants" });
const docx = await client.files.create({ file: fs.createReadStream(docxPath), purpose: "assistants" });
out.created = { pdf: { id: pdf.id, object: pdf.object, filename: pdf.filename, bytes: pdf.bytes }, docx: { id: docx.id, filename: docx.filename } };
const listed = [];
for await (const f of client.files.list()) listed.push(f.id);
out.listed = listed;

// A vector store, and the files added by uploadAndPoll (it uploads again:
// the same bytes are the same files).
const vs = await client.vectorStores.create({ name: "Handbook" });
const batch = await client.vectorStores.fileBatches.uploadAndPoll(vs.id, {
  files: [fs.createReadStream(pdfPath), fs.createReadStream(docxPath)],
});
out.batch = { status: batch.status, counts: batch.file_counts, object: batch.object };
const store = await client.vectorStores.retrieve(vs.id);
out.store = { id: store.id, status: store.status, counts: store.file_counts };
const storeFiles = [];
for await (const f of client.vectorStores.files.list(vs.id)) storeFiles.push({ id: f.id, status: f.status });
out.store_files = storeFiles;

// vectorStores.search.
const hits = [];
for await (const r of client.vectorStores.search(vs.id, { query: "how many days of paid leave" })) {
  hits.push({ file_id: r.file_id, filename: r.filename, score: r.score, text: r.content.map((c) => c.text).join(""), attributes: r.attributes });
}
out.search = hits;

// responses.create with the file_search tool.
const resp = await client.responses.create({
  model: "fake",
  input: '[[tool=file_search args={"query":"paid leave"}]]',
  tools: [{ type: "file_search", vector_store_ids: [vs.id] }],
});
const call = resp.output.find((i) => i.type === "file_search_call");
const msg = resp.output.find((i) => i.type === "message");
out.response = {
  status: resp.status,
  call: call ? { status: call.status, queries: call.queries } : null,
  text: resp.output_text,
  annotations: msg ? msg.content[0].annotations : null,
};
const again = await client.responses.retrieve(resp.id);
out.retrieved = again.output.find((i) => i.type === "message")?.content[0].annotations ?? null;

// Another member: every id is not found.
const refused = {};
for (const [name, f] of Object.entries({
  file: () => other.files.retrieve(pdf.id),
  content: () => other.files.content(pdf.id),
  store: () => other.vectorStores.retrieve(vs.id),
  search: () => other.vectorStores.search(vs.id, { query: "leave" }),
  response: () => other.responses.create({ model: "fake", input: "hi", tools: [{ type: "file_search", vector_store_ids: [vs.id] }] }),
})) {
  try {
    await f();
    refused[name] = 200;
  } catch (e) {
    refused[name] = e.status;
  }
}
out.refused = refused;

// Bad input: a lying type, in OpenAI's error shape.
try {
  await client.files.create({ file: new File([Buffer.from("just text")], "fake.pdf", { type: "application/pdf" }), purpose: "assistants" });
  out.bad = null;
} catch (e) {
  out.bad = { status: e.status, type: e.error?.type, message: e.error?.message };
}
console.log(JSON.stringify(out));
