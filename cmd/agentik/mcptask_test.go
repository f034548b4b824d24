package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// The tasks extension's methods as the Go SDK sends them: it has no task
// types, but sends any method an extension adds (AddSendingCustomMethod),
// with the request's _meta (protocol version, client capabilities) as for
// its own.
type (
	taskIDParams struct {
		mcp.ParamsBase
		TaskID string `json:"taskId"`
	}
	taskUpdateParams struct {
		mcp.ParamsBase
		TaskID         string         `json:"taskId"`
		InputResponses map[string]any `json:"inputResponses"`
	}
	taskAck struct {
		mcp.ResultBase
		ResultType string `json:"resultType"`
	}
	mcpTask struct {
		mcp.ResultBase
		ResultType     string `json:"resultType"`
		TaskID         string `json:"taskId"`
		Status         string `json:"status"`
		StatusMessage  string `json:"statusMessage"`
		CreatedAt      string `json:"createdAt"`
		LastUpdatedAt  string `json:"lastUpdatedAt"`
		PollIntervalMs int64  `json:"pollIntervalMs"`
		InputRequests  map[string]struct {
			Method string `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		} `json:"inputRequests"`
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
			ResultType        string         `json:"resultType"`
		} `json:"result"`
	}
)

const tasksExtension = "io.modelcontextprotocol/tasks"

// taskClient is the Go SDK's client declaring the tasks extension (and
// elicitation, so that what waits for a person is asked of it).
func taskClient(t *testing.T, ctx context.Context, p *proc, key string) *mcp.ClientSession {
	t.Helper()
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(tasksExtension, nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "agentik-go-task-test", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: caps,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Errorf("a task's approval was asked as an input_required result of the call, want it in tasks/get")
			return &mcp.ElicitResult{Action: "cancel"}, nil
		},
	})
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if err := mcp.AddSendingCustomMethod[*taskIDParams, *mcpTask](c, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := mcp.AddSendingCustomMethod[*taskUpdateParams, *taskAck](c, "tasks/update"); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url("/mcp"), HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("the Go SDK could not connect: %v\nagentik logs:\n%s", err, p.logs)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// taskOf is the task id of a tools/call answered with a task handle: the
// Go SDK reads the result as a CallToolResult, whose _meta keeps it.
func taskOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	id, _ := rel["taskId"].(string)
	if id == "" {
		t.Fatalf("the call was not answered with a task: %q, _meta %v", goText(res), res.Meta)
	}
	return id
}

func getTask(t *testing.T, ctx context.Context, cs *mcp.ClientSession, id string) *mcpTask {
	t.Helper()
	tk, err := mcp.CallCustomMethod[*taskIDParams, *mcpTask](ctx, cs, "tasks/get", &taskIDParams{TaskID: id})
	if err != nil {
		t.Fatalf("tasks/get %s: %v", id, err)
	}
	return tk
}

// rawMCP posts one 2026-07-28 JSON-RPC request to p's /mcp with key and
// decodes the answer.
func rawMCP(t *testing.T, p *proc, key, method string, params map[string]any, declare bool) (result json.RawMessage, rpcErr *struct {
	Code    int
	Message string
	Data    json.RawMessage
}) {
	t.Helper()
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest("POST", p.url("/mcp"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
			Data    json.RawMessage
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatalf("%s: %d, not JSON: %v", method, resp.StatusCode, err)
	}
	return msg.Result, msg.Error
}

// TestMCPGoSDKTask follows ask_agentik calls as tasks (the tasks extension,
// io.modelcontextprotocol/tasks) with the official Go MCP SDK negotiating
// 2026-07-28 against the real binary. A long call is answered with a task
// handle; tasks/get polling shows the text so far while it works and the
// whole answer once completed. A call whose tool call needs approval is a
// task waiting for input: tasks/get lists the approval as inputRequests,
// tasks/update answers it (through the inbox), and the task completes
// with the tool's result. Over raw JSON-RPC: the handle's shape, another
// user's task id and one agentik never gave are not found, a request
// that does not declare the extension gets -32021, and tasks/cancel
// interrupts the turn.
func TestMCPGoSDKTask(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	auth := map[string]string{"Authorization": "Bearer " + a2aKey}
	waitTools(t, p, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := taskClient(t, ctx, p, a2aKey)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the Go SDK negotiated %q, want 2026-07-28", v)
	}
	if _, ok := cs.InitializeResult().Capabilities.Extensions[tasksExtension]; !ok {
		t.Errorf("server/discover does not offer %s: %+v", tasksExtension, cs.InitializeResult().Capabilities)
	}

	// A long call: a task, its text so far while it works, then the answer.
	const n = 1500
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": "[[tokens=1500 delay=4ms]]"}})
	if err != nil {
		t.Fatalf("long call: %v\n%s", err, p.logs)
	}
	long := taskOf(t, res)
	var sawText bool
	var done *mcpTask
	testwait.For(t, "the long task completed", func() bool {
		tk := getTask(t, ctx, cs, long)
		switch tk.Status {
		case "working":
			if tk.StatusMessage != "" {
				if !strings.HasPrefix(llmtest.Tokens(n), tk.StatusMessage) {
					t.Fatalf("the text so far %q is not a prefix of the answer", tk.StatusMessage)
				}
				sawText = true
			}
		case "completed":
			done = tk
			return true
		default:
			t.Fatalf("the long task is %s: %+v", tk.Status, tk)
		}
		return false
	})
	if !sawText {
		t.Errorf("tasks/get never showed the text so far while the task worked")
	}
	if done.Result == nil || len(done.Result.Content) != 1 || done.Result.Content[0].Text != llmtest.Tokens(n) || done.Result.IsError || done.Result.ResultType != "complete" ||
		done.Result.StructuredContent["conversation_id"] == "" || done.ResultType != "complete" || done.CreatedAt == "" || done.PollIntervalMs <= 0 {
		t.Errorf("the completed task: %+v", done)
	}

	// An approval inside a task: input_required in tasks/get, answered by
	// tasks/update.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": `[[tool=everything__echo args={"message":"ping task"}]]`}})
	if err != nil {
		t.Fatalf("call needing approval: %v\n%s", err, p.logs)
	}
	approval := taskOf(t, res)
	var key string
	testwait.For(t, "the task waiting for the approval", func() bool {
		tk := getTask(t, ctx, cs, approval)
		for k, r := range tk.InputRequests {
			if tk.Status == "input_required" && r.Method == "elicitation/create" && strings.Contains(r.Params.Message, "everything__echo") && strings.HasPrefix(k, "approval.") {
				key = k
			}
		}
		return key != ""
	})
	ack, err := mcp.CallCustomMethod[*taskUpdateParams, *taskAck](ctx, cs, "tasks/update", &taskUpdateParams{TaskID: approval,
		InputResponses: map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"decision": "approve"}}}})
	if err != nil || ack.ResultType != "complete" {
		t.Fatalf("tasks/update: %+v %v", ack, err)
	}
	testwait.For(t, "the approved task completed", func() bool {
		done = getTask(t, ctx, cs, approval)
		return done.Status == "completed"
	})
	if done.Result == nil || len(done.Result.Content) != 1 || !strings.Contains(done.Result.Content[0].Text, "ping task") || done.Result.IsError {
		t.Errorf("the approved task's result: %+v", done.Result)
	}
	if !strings.Contains(p.logs.String(), "mcp_input_answered") {
		t.Errorf("the approval did not go through the inbox (no mcp_input_answered):\n%s", p.logs)
	}

	// Raw JSON-RPC: the handle's own shape.
	raw, rerr := rawMCP(t, p, a2aKey, "tools/call", map[string]any{"name": "ask_agentik", "arguments": map[string]any{"message": "[[tokens=3000 delay=4ms]]"}}, true)
	var handle map[string]any
	if rerr != nil || json.Unmarshal(raw, &handle) != nil || handle["resultType"] != "task" || handle["status"] != "working" || handle["taskId"] == "" {
		t.Fatalf("a long tools/call over raw JSON-RPC: %s %+v, want a task handle", raw, rerr)
	}
	if _, has := handle["ttlMs"]; !has {
		t.Errorf("the handle has no ttlMs: %s", raw)
	}
	third, _ := handle["taskId"].(string)

	// Owner-only: another user's task is not found, nor an id agentik never
	// gave; a request that does not declare the extension is refused.
	member := memberKey(t, p)
	for _, id := range []string{third, "agentik-task.bm90LWEtdGFzaw", "786512e2-9e0d-44bd-8f29-789f320fe840"} {
		if raw, e := rawMCP(t, p, member, "tasks/get", map[string]any{"taskId": id}, true); e == nil || e.Code != -32602 {
			t.Errorf("another user's tasks/get of %s: %s %+v, want -32602", id, raw, e)
		}
	}
	if raw, e := rawMCP(t, p, member, "tasks/cancel", map[string]any{"taskId": third}, true); e == nil || e.Code != -32602 {
		t.Errorf("another user's tasks/cancel: %s %+v, want -32602", raw, e)
	}
	if raw, e := rawMCP(t, p, a2aKey, "tasks/get", map[string]any{"taskId": third}, false); e == nil || e.Code != -32021 || !strings.Contains(string(e.Data), tasksExtension) {
		t.Errorf("tasks/get without the extension declared: %s %+v, want -32021 naming it", raw, e)
	}

	// tasks/cancel interrupts the turn: the task ends cancelled.
	if _, err := mcp.CallCustomMethod[*taskIDParams, *mcpTask](ctx, cs, "tasks/cancel", &taskIDParams{TaskID: third}); err != nil {
		var we *jsonrpc.Error
		errors.As(err, &we)
		t.Fatalf("tasks/cancel: %v (%+v)", err, we)
	}
	testwait.For(t, "the cancelled task", func() bool {
		return getTask(t, ctx, cs, third).Status == "cancelled"
	})
}

// TestMCPTasksTS follows ask_agentik calls as tasks with the tasks
// extension's TypeScript requester (@modelcontextprotocol/ext-tasks on
// @modelcontextprotocol/client 2, pinned to 2026-07-28;
// testdata/mcp_tasks.mjs) against the real binary: a long call becomes a
// task whose polls show the text so far and end with the answer; a call
// needing approval becomes a task waiting for input, its handler is asked
// and the answer (tasks/update) lets the turn finish.
func TestMCPTasksTS(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "ext-tasks", "package.json")); err != nil {
		t.Fatalf("@modelcontextprotocol/ext-tasks is missing: run `npm ci` in %s: %v", repoRoot(t), err)
	}
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + a2aKey})
	var got struct {
		Capabilities struct{ Execution, InputResponses, Cancellation bool }
		Long         struct {
			Kind, TaskID, Status, Text, Error string
			Working                           []string
		}
		Approval struct{ Kind, Status, Text, Error string }
		Asked    []string
	}
	runNode(t, p, "mcp_tasks.mjs", a2aKey, &got)
	if !got.Capabilities.Execution || !got.Capabilities.InputResponses || !got.Capabilities.Cancellation {
		t.Errorf("ext-tasks sees the server's tasks capabilities as %+v", got.Capabilities)
	}
	if got.Long.Kind != "task" || !strings.HasPrefix(got.Long.TaskID, "agentik-task.") || got.Long.Status != "completed" || got.Long.Text != llmtest.Tokens(1500) {
		t.Errorf("the long call: a %s, task %q, %s with %d bytes of text (want the task completed with the answer) %s", got.Long.Kind, got.Long.TaskID, got.Long.Status, len(got.Long.Text), got.Long.Error)
	}
	if len(got.Long.Working) == 0 {
		t.Errorf("no poll of the long task showed the text so far")
	}
	for _, w := range got.Long.Working {
		if !strings.HasPrefix(llmtest.Tokens(1500), w) {
			t.Errorf("the text so far (%d bytes, ending %q) is not a prefix of the answer", len(w), w[max(0, len(w)-40):])
			break
		}
	}
	if got.Approval.Kind != "task" || got.Approval.Status != "completed" || !strings.Contains(got.Approval.Text, "ping ts") ||
		len(got.Asked) != 1 || !strings.Contains(got.Asked[0], "everything__echo") {
		t.Errorf("the call needing approval: %+v, asked %q", got.Approval, got.Asked)
	}
}

// TestMCPTaskAcrossRestart: a task outlives the process that made it. A
// call whose answer the model holds becomes a task, whose tasks/get shows
// exactly the text so far; the binary stops (SIGTERM, no drain) and
// starts again on the same database, and tasks/get there follows the
// continued turn to its whole answer: nothing of the task lived in the
// first process.
func TestMCPTaskAcrossRestart(t *testing.T) {
	t.Parallel()
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), HoldAfter: heldAfter, Hold: hold})
	addr, db := freeAddr(t), filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + a2aKey}
	p := start(t, addr, db, append(env, "AGENTIK_DRAIN_TIMEOUT=0")...)

	raw, e := rawMCP(t, p, a2aKey, "tools/call", map[string]any{"name": "ask_agentik", "arguments": map[string]any{"message": "hello"}}, true)
	var handle struct{ ResultType, TaskID, Status string }
	if e != nil || json.Unmarshal(raw, &handle) != nil || handle.ResultType != "task" || handle.Status != "working" {
		t.Fatalf("the held call: %s %+v, want a working task\n%s", raw, e, p.logs)
	}
	var tk struct{ Status, StatusMessage string }
	testwait.For(t, "the task's text so far, up to the hold", func() bool {
		raw, e := rawMCP(t, p, a2aKey, "tasks/get", map[string]any{"taskId": handle.TaskID}, true)
		if e != nil || json.Unmarshal(raw, &tk) != nil {
			t.Fatalf("tasks/get: %s %+v", raw, e)
		}
		return tk.StatusMessage == heldText
	})
	if tk.Status != "working" {
		t.Fatalf("the held task is %s, want working", tk.Status)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	fake.Enqueue(llmtest.Reply{Text: " and the rest."})
	p = start(t, addr, db, env...)
	var done struct {
		Status string
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
	}
	testwait.For(t, "the task completed after the restart", func() bool {
		raw, e := rawMCP(t, p, a2aKey, "tasks/get", map[string]any{"taskId": handle.TaskID}, true)
		if e != nil || json.Unmarshal(raw, &done) != nil {
			t.Fatalf("tasks/get after the restart: %s %+v\n%s", raw, e, p.logs)
		}
		return done.Status != "working"
	})
	if whole := heldText + " and the rest."; done.Status != "completed" || len(done.Result.Content) != 1 || done.Result.Content[0].Text != whole || done.Result.IsError {
		t.Errorf("the task after the restart: %+v, want completed with %q", done, whole)
	}
}

// TestMCPTaskOtherInstance: two binaries on one PostgreSQL. A call made on
// A whose answer the model holds becomes a task; B answers its tasks/get
// with the text so far (another user's tasks/get there: not found), and
// B's tasks/cancel interrupts the turn A runs: the task is cancelled, as
// either instance reports.
func TestMCPTaskOtherInstance(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), HoldAfter: heldAfter, Hold: hold})
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + a2aKey}
	a := startDSN(t, dsn, env...)
	b := startDSN(t, dsn, env...)
	member := memberKey(t, a)

	raw, e := rawMCP(t, a, a2aKey, "tools/call", map[string]any{"name": "ask_agentik", "arguments": map[string]any{"message": "hello"}}, true)
	var handle struct{ ResultType, TaskID, Status string }
	if e != nil || json.Unmarshal(raw, &handle) != nil || handle.ResultType != "task" {
		t.Fatalf("the held call on A: %s %+v, want a task\n%s", raw, e, a.logs)
	}
	get := func(p *proc, key string) (task struct{ Status, StatusMessage string }) {
		raw, e := rawMCP(t, p, key, "tasks/get", map[string]any{"taskId": handle.TaskID}, true)
		if e != nil || json.Unmarshal(raw, &task) != nil {
			t.Fatalf("tasks/get: %s %+v", raw, e)
		}
		return task
	}
	testwait.For(t, "B showing the task's text so far", func() bool {
		tk := get(b, a2aKey)
		return tk.Status == "working" && tk.StatusMessage == heldText
	})
	if raw, e := rawMCP(t, b, member, "tasks/get", map[string]any{"taskId": handle.TaskID}, true); e == nil || e.Code != -32602 {
		t.Errorf("another user's tasks/get on B: %s %+v, want -32602", raw, e)
	}
	if raw, e := rawMCP(t, b, a2aKey, "tasks/cancel", map[string]any{"taskId": handle.TaskID}, true); e != nil {
		t.Fatalf("tasks/cancel on B: %s %+v\n%s", raw, e, b.logs)
	}
	testwait.For(t, "the task cancelled, as A reports it", func() bool { return get(a, a2aKey).Status == "cancelled" })
	// B learns of the cancel through PostgreSQL (NOTIFY, then its catch-up
	// read), after A: a loaded machine showed B still "working" once A
	// said cancelled.
	testwait.For(t, "the task cancelled, as B reports it", func() bool { return get(b, a2aKey).Status == "cancelled" })
}
