// A minimal useChat page (@ai-sdk/react) pointed at agentik: what a
// developer drops into their own app. aisdk_browser_test.go bundles it with
// esbuild and opens it in Chromium as page.html?api=<agentik>&chat=<id>.
import { useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

const q = new URLSearchParams(location.search);
const headers = q.get("key") ? { Authorization: "Bearer " + q.get("key") } : {};
const transport = new DefaultChatTransport({ api: q.get("api") + "/agentik/ai-sdk/chat", headers });

function Chat() {
  const { messages, sendMessage, status, error, addToolApprovalResponse } = useChat({
    id: q.get("chat"), transport, resume: true,
    // An answered approval goes to agentik at once; the answer streams on.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  return (
    <main>
      <p id="status">{status}</p>
      {error && <p id="error">{error.message}</p>}
      {messages.map((m) => (
        <div key={m.id} className={"msg " + m.role}>
          {m.parts.map((p, i) =>
            p.type === "text" ? <span key={i}>{p.text}</span> :
            p.type === "dynamic-tool" ? (
              <div key={i} className="tool" data-state={p.state}>
                {p.toolName}
                {p.state === "approval-requested" && (
                  <button className="approve" onClick={() => addToolApprovalResponse({ id: p.approval.id, approved: true })}>Approve</button>
                )}
              </div>
            ) : null)}
        </div>
      ))}
      <form onSubmit={(e) => { e.preventDefault(); sendMessage({ text: input }); setInput(""); }}>
        <input id="input" value={input} onChange={(e) => setInput(e.target.value)} />
        <button id="send" type="submit">Send</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
