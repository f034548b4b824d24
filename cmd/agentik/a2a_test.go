package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// a2aEnv is the real binary with the fake model, a key, and the npm
// reference MCP server whose echo tool needs approval.
func a2aEnv(t *testing.T) (env []string, db string) {
	t.Helper()
	root := repoRoot(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	sdk := filepath.Join(root, "node_modules", "@a2a-js", "sdk", "package.json")
	for _, f := range []string{entry, sdk} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is missing: run `npm ci` in %s: %v", f, root, err)
		}
	}
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"],"requireApproval":{"always":["echo"]}}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	_, fakeURL := llmtest.NewHTTPServer(t)
	return []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp, "AGENTIK_API_KEYS=" + a2aKey, "AGENTIK_WEBHOOK_SECRET=" + a2aSecret,
		"AGENTIK_PUSH_ALLOW=127.0.0.1"}, filepath.Join(dir, "agentik.db") // the tests' push receivers are on loopback
}

const a2aKey = "sk-agentik-a2a"

// a2aSecret signs the turn.ended webhooks (Standard Webhooks); push
// notifications must not be signed with it.
const a2aSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// memberKey adds a member user (as the admin key a2aKey) and returns a
// key of theirs: another user, whose view of the admin's work is empty.
func memberKey(t *testing.T, p *proc) string {
	t.Helper()
	var u struct{ ID string }
	must(t, a2aKey, "POST", p.url("/agentik/users"), `{"name":"ann","email":"ann@example.com"}`, &u)
	var k struct{ Key string }
	must(t, a2aKey, "POST", p.url("/agentik/users/"+u.ID+"/keys"), `{"name":"laptop"}`, &k)
	return k.Key
}

// runA2A runs testdata/a2a_sdk.mjs in phase against p and decodes what it printed.
func runA2A(t *testing.T, p *proc, phase string, out any, env ...string) {
	t.Helper()
	runNode(t, p, "a2a_sdk.mjs", a2aKey, out, append([]string{"A2A_PHASE=" + phase}, env...)...)
}

// runNode runs testdata/<script> against p (AGENTIK_URL, AGENTIK_KEY=key
// and env) and decodes the one JSON object it prints into out.
func runNode(t *testing.T, p *proc, script, key string, out any, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", script))
	cmd.Env = append(append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %v: %v\n%s\nagentik logs:\n%s", script, env, err, stderr.String(), p.logs)
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
}

type a2aFollowed struct {
	Kinds     []string
	Text      string
	States    []string
	Artifacts int
	TaskID    string
	First     *struct{ ID, ContextID, State, Text string }
}

// TestA2ASDK drives agentik's A2A server with @a2a-js/sdk's client
// (testdata/a2a_sdk.mjs) against the real binary: card discovery, a
// blocking send and a second message in its context, get and list, a
// streaming send, a dropped stream resubscribed (snapshot + later updates
// = the whole answer, once), cancel, a tool call approved over A2A, and
// bad input in JSON-RPC's own error shape.
func TestA2ASDK(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + a2aKey})
	var got struct {
		Card struct {
			Name, Bearer, URL, Binding string
			Skills, Schemes            []string
			Streaming                  bool
			SlugName                   string `json:"slug_name"`
			BearerV03                  string `json:"bearer_v03"`
		}
		Send struct {
			State, Text, ContextID, ID string
			History                    int
		}
		Second struct{ State, Text, ContextID, ID string }
		Get    struct{ State, Text string }
		List   []struct{ ID, State string }
		Stream a2aFollowed
		Resub  struct {
			Before   string
			Snapshot struct{ ID, State, Text string }
			Later    string // the text of the updates after the snapshot
			Whole    string // the snapshot's text and the updates
			States   []string
			Kinds    []string
		} `json:"resubscribe"`
		Cancel struct {
			State        string
			StreamStates []string
			Again        string
		}
		Approval struct {
			State   string
			Waiting struct {
				Waiting []struct {
					CallID string `json:"call_id"`
					Name   string
				}
			}
			After struct {
				State, Text string
				ID          bool
			}
			Again string
		}
		UnknownTask   string `json:"unknown_task"`
		UnknownMethod int    `json:"unknown_method"`
		Malformed     int
		NoMessage     int `json:"no_message"`
		WrongKey      int `json:"wrong_key"`
		PublicCard    int `json:"public_card"`
		UnknownAgent  int `json:"unknown_agent"`
		Push          struct {
			Task   string
			Pushes []struct {
				Token, State, Text, ID string
				Signed                 bool
				WebhookSecret          bool `json:"webhook_secret"`
			}
			Configs struct {
				Made, Got     bool
				Listed, After int
			}
			BadURL string `json:"bad_url"`
		}
		Member struct {
			Get, Send, List string
			Card            string
		}
	}
	runA2A(t, p, "main", &got, "AGENTIK_MEMBER_KEY="+memberKey(t, p), "AGENTIK_WEBHOOK_SECRET="+a2aSecret)

	c := got.Card
	if c.Name != "agentik" || len(c.Skills) != 1 || c.Skills[0] != "agentik" || !c.Streaming || c.Bearer != "Bearer" || c.URL != p.url("/a2a/agentik") || c.Binding != "JSONRPC" || c.SlugName != "agentik" || c.BearerV03 != "http bearer" {
		t.Errorf("card %+v", c)
	}
	if got.Send.State != "COMPLETED" || got.Send.Text != "You said: hello a2a" || got.Send.ContextID == "" || got.Send.History != 1 {
		t.Errorf("send %+v", got.Send)
	}
	if got.Second.State != "COMPLETED" || got.Second.Text != "You said: second one" || got.Second.ContextID != got.Send.ContextID || got.Second.ID == got.Send.ID {
		t.Errorf("second message in the context %+v (first %+v)", got.Second, got.Send)
	}
	if got.Get.State != "COMPLETED" || got.Get.Text != got.Send.Text {
		t.Errorf("get %+v", got.Get)
	}
	if len(got.List) != 2 || got.List[0].ID != got.Second.ID || got.List[1].ID != got.Send.ID || got.List[0].State != "COMPLETED" {
		t.Errorf("list %+v", got.List)
	}
	s := got.Stream
	if len(s.Kinds) == 0 || s.Kinds[0] != "task" || s.Text != llmtest.Tokens(30) || s.Artifacts < 2 || len(s.States) == 0 || s.States[len(s.States)-1] != "COMPLETED" {
		t.Errorf("streaming send %+v", s)
	}
	r := got.Resub
	whole := llmtest.Tokens(300)
	if r.Before == "" || !strings.HasPrefix(r.Snapshot.Text, r.Before) || r.Snapshot.Text+r.Later != whole || r.Whole != whole || len(r.Kinds) != 1 || r.Kinds[0] != "task" || r.States[len(r.States)-1] != "COMPLETED" {
		t.Errorf("resubscribe: before %d bytes, snapshot %d bytes (%s), later %d bytes, states %v, kinds %v, want %d bytes in all; prefix %v, whole %v",
			len(r.Before), len(r.Snapshot.Text), r.Snapshot.State, len(r.Later), r.States, r.Kinds, len(whole), strings.HasPrefix(r.Snapshot.Text, r.Before), r.Snapshot.Text+r.Later == whole)
	}
	if got.Cancel.State != "CANCELED" || len(got.Cancel.StreamStates) == 0 || got.Cancel.StreamStates[len(got.Cancel.StreamStates)-1] != "CANCELED" || !strings.HasSuffix(got.Cancel.Again, "TaskNotCancelableError") {
		t.Errorf("cancel %+v", got.Cancel)
	}
	a := got.Approval
	if a.State != "INPUT_REQUIRED" || len(a.Waiting.Waiting) != 1 || a.Waiting.Waiting[0].Name != "everything__echo" || a.Waiting.Waiting[0].CallID == "" {
		t.Errorf("approval asked %+v", a)
	}
	if a.After.State != "COMPLETED" || !strings.Contains(a.After.Text, "ping a2a") || !a.After.ID || !strings.HasSuffix(a.Again, "UnsupportedOperationError") {
		t.Errorf("approval answered %+v", a)
	}
	if !strings.HasSuffix(got.UnknownTask, "TaskNotFoundError") || got.UnknownMethod != -32601 || got.Malformed != -32700 || got.NoMessage != -32602 {
		t.Errorf("errors: unknown task %q, unknown method %d, malformed %d, no message %d", got.UnknownTask, got.UnknownMethod, got.Malformed, got.NoMessage)
	}
	pu := got.Push
	if n := len(pu.Pushes); n == 0 || pu.Pushes[n-1].State != "TASK_STATE_COMPLETED" || pu.Pushes[n-1].Text != "You said: hello push" || pu.Pushes[n-1].ID != pu.Task || pu.Pushes[n-1].Token != "tok-1" || !pu.Pushes[n-1].Signed || pu.Pushes[n-1].WebhookSecret {
		t.Errorf("push notifications %+v", pu.Pushes)
	}
	if !pu.Configs.Made || pu.Configs.Listed != 1 || !pu.Configs.Got || pu.Configs.After != 0 || pu.BadURL == "" {
		t.Errorf("push configs %+v, bad url %q", pu.Configs, pu.BadURL)
	}
	// Another user: the admin's task and context do not exist for them.
	m := got.Member
	if !strings.HasSuffix(m.Get, "TaskNotFoundError") || !strings.Contains(m.Send, "no context") || !strings.Contains(m.List, "no context") || m.Card != "agentik" {
		t.Errorf("another user's view: %+v", m)
	}
	if got.WrongKey != 401 || got.PublicCard != 200 || got.UnknownAgent != 404 {
		t.Errorf("wrong key %d, public card %d, unknown agent %d", got.WrongKey, got.PublicCard, got.UnknownAgent)
	}
}

// TestA2AResubscribeAfterKill9 reads part of a streamed task with
// @a2a-js/sdk, kills the real binary with SIGKILL, restarts it, and
// resubscribes: the task is failed with the restart's error and its
// artifact holds everything the client saw before the kill; the context
// takes a new message.
func TestA2AResubscribeAfterKill9(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	addr := freeAddr(t)
	p := start(t, addr, db, env...)
	var first struct{ Task, Before string }
	runA2A(t, p, "kill_start", &first)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start(t, addr, db, env...)
	var got struct {
		Snapshot struct{ ID, State, Text string }
		Later    string
		Get      struct{ State, Text, Error string }
		Next     struct{ State, Text string }
	}
	runA2A(t, p, "kill_resume", &got, "A2A_TASK="+first.Task)
	// The task's turn is continued after the restart: the same task goes
	// on to COMPLETED, the resubscription seeing the rest once.
	if first.Before == "" || got.Snapshot.ID != first.Task || !strings.HasPrefix(got.Snapshot.Text, first.Before) {
		t.Errorf("after kill -9: saw %d bytes before; snapshot %s %s with %d bytes, later %q", len(first.Before), got.Snapshot.ID, got.Snapshot.State, len(got.Snapshot.Text), got.Later)
	}
	if got.Get.State != "COMPLETED" || got.Get.Error != "" || got.Get.Text != got.Snapshot.Text+got.Later {
		t.Errorf("get after restart %+v", got.Get)
	}
	if got.Next.State != "COMPLETED" || got.Next.Text != "You said: after restart" {
		t.Errorf("next message %+v", got.Next)
	}
}

// TestA2ASDKREST drives agentik's A2A HTTP+JSON binding with
// @a2a-js/sdk's REST transport (the factory picks the card's HTTP+JSON
// interface) against the real binary: send and a second message in its
// context, get, list, streaming send, a dropped stream resubscribed
// (snapshot + later updates = the whole answer, once), cancel, an
// approval, push configs, and bad input as google.rpc.Status bodies with
// A2A's HTTP statuses; another user's task is not found.
func TestA2ASDKREST(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + a2aKey})
	type rawErr struct {
		Status, Code int
		GRPC, Reason string
		Message      string
	}
	var got struct {
		Binding, Endpoint string
		Send              struct{ State, Text, ContextID, ID string }
		Second            struct{ State, Text, ContextID string }
		Get               struct {
			State, Text string
			History     int
		}
		List   []struct{ ID, State, Text string }
		Stream a2aFollowed
		Resub  struct {
			Before   string
			Snapshot struct{ ID, State, Text string }
			Later    string
			Whole    string
			States   []string
			Kinds    []string
		} `json:"resubscribe"`
		Cancel struct {
			State        string
			StreamStates []string
			Again        string
		}
		Approval struct {
			State string
			After struct{ State, Text string }
		}
		Push struct {
			Made, Got     bool
			Listed, After int
		}
		UnknownTask  string `json:"unknown_task"`
		Malformed    rawErr
		NoMessage    rawErr `json:"no_message"`
		BadHistory   rawErr `json:"bad_history"`
		NoRoute      rawErr `json:"no_route"`
		WrongKey     rawErr `json:"wrong_key"`
		UnknownAgent int    `json:"unknown_agent"`
		Member       struct{ Get, Send, Cancel string }
	}
	runA2A(t, p, "rest", &got, "AGENTIK_MEMBER_KEY="+memberKey(t, p))

	if got.Binding != "HTTP+JSON" || got.Endpoint != p.url("/a2a/agentik") {
		t.Errorf("the SDK chose %s at %s, want HTTP+JSON at the agent's base", got.Binding, got.Endpoint)
	}
	if got.Send.State != "COMPLETED" || got.Send.Text != "You said: hello rest" || got.Second.ContextID != got.Send.ContextID || got.Second.Text != "You said: second rest" {
		t.Errorf("send %+v, second %+v", got.Send, got.Second)
	}
	if got.Get.State != "COMPLETED" || got.Get.Text != got.Send.Text || got.Get.History != 1 {
		t.Errorf("get %+v", got.Get)
	}
	if len(got.List) != 2 || got.List[1].ID != got.Send.ID || got.List[1].Text != got.Send.Text {
		t.Errorf("list %+v", got.List)
	}
	s := got.Stream
	if len(s.Kinds) == 0 || s.Kinds[0] != "task" || s.Text != llmtest.Tokens(100) || s.Artifacts < 2 || len(s.States) == 0 || s.States[len(s.States)-1] != "COMPLETED" {
		t.Errorf("streaming send: kinds %v, %d artifact updates, states %v, text %d bytes", s.Kinds, s.Artifacts, s.States, len(s.Text))
	}
	r := got.Resub
	whole := llmtest.Tokens(300)
	if r.Before == "" || !strings.HasPrefix(r.Snapshot.Text, r.Before) || r.Snapshot.Text+r.Later != whole || r.Whole != whole || len(r.Kinds) != 1 || r.Kinds[0] != "task" || r.States[len(r.States)-1] != "COMPLETED" {
		t.Errorf("resubscribe: before %d bytes, snapshot %d bytes (%s), later %d bytes, states %v; want %d bytes in all, once",
			len(r.Before), len(r.Snapshot.Text), r.Snapshot.State, len(r.Later), r.States, len(whole))
	}
	if got.Cancel.State != "CANCELED" || len(got.Cancel.StreamStates) == 0 || got.Cancel.StreamStates[len(got.Cancel.StreamStates)-1] != "CANCELED" || !strings.HasPrefix(got.Cancel.Again, "RestTaskNotCancelableError") {
		t.Errorf("cancel %+v", got.Cancel)
	}
	if got.Approval.State != "INPUT_REQUIRED" || got.Approval.After.State != "COMPLETED" || !strings.Contains(got.Approval.After.Text, "ping rest") {
		t.Errorf("approval %+v", got.Approval)
	}
	if pu := got.Push; !pu.Made || pu.Listed != 1 || !pu.Got || pu.After != 0 {
		t.Errorf("push configs %+v", pu)
	}
	if !strings.HasPrefix(got.UnknownTask, "RestTaskNotFoundError") {
		t.Errorf("unknown task: %s", got.UnknownTask)
	}
	for _, c := range []struct {
		name         string
		got          rawErr
		status       int
		grpc, reason string
	}{
		{"malformed body", got.Malformed, 400, "INVALID_ARGUMENT", "PARSE_ERROR"},
		{"no message", got.NoMessage, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"},
		{"bad historyLength", got.BadHistory, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"},
		{"no such task action", got.NoRoute, 404, "UNIMPLEMENTED", "METHOD_NOT_FOUND"},
	} {
		if c.got.Status != c.status || c.got.Code != c.status || c.got.GRPC != c.grpc || c.got.Reason != c.reason || c.got.Message == "" {
			t.Errorf("%s: %+v, want %d %s %s", c.name, c.got, c.status, c.grpc, c.reason)
		}
	}
	if got.WrongKey.Status != 401 || got.UnknownAgent != 404 {
		t.Errorf("wrong key %d, unknown agent %d", got.WrongKey.Status, got.UnknownAgent)
	}
	m := got.Member
	if m.Get != "RestTaskNotFoundError" || m.Cancel != "RestTaskNotFoundError" || !strings.Contains(m.Send, "no context") {
		t.Errorf("another user's view over REST: %+v", m)
	}
}

// TestA2ASDK03 drives agentik's A2A 0.3 JSON-RPC methods with
// @a2a-js/sdk's legacy (0.3) transport against the real binary, reads the
// card as a 0.3 client does, and sends one raw frame per A2A 1.0 method
// and per 0.3 shape.
func TestA2ASDK03(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + a2aKey})
	var got struct {
		Card struct {
			Version, URL, Transport string
			Security                []string
		}
		Send struct {
			State, Text, ContextID, ID string
			History                    int
		}
		Second struct{ State, Text, ContextID string }
		Get    struct{ State, Text string }
		Stream a2aFollowed
		Resub  struct {
			Before   string
			Snapshot struct{ ID, State, Text string }
			Later    string
			Whole    string
			States   []string
		} `json:"resubscribe"`
		Cancel   struct{ State, Again string }
		Approval struct {
			State   string
			Waiting int
			After   struct{ State, Text string }
		}
		Push struct {
			Made, Task, Got bool
			Listed, After   int
		}
		UnknownTask string `json:"unknown_task"`
		Raw03       struct {
			Kind, State, Text, PartKind string
			StreamKinds                 []string
			Final                       bool
			List                        int
		}
		V1 map[string]any
		// V1StreamFrames is the raw SendStreamingMessage's frames (or its
		// answer), shown when its last state is not the one wanted.
		V1StreamFrames json.RawMessage
	}
	runA2A(t, p, "v03", &got)

	if c := got.Card; c.Version != "0.3.0" || c.URL != p.url("/a2a/agentik") || c.Transport != "JSONRPC" || len(c.Security) != 1 || c.Security[0] != "bearer" {
		t.Errorf("the card as 0.3 reads it: %+v", c)
	}
	if got.Send.State != "COMPLETED" || got.Send.Text != "You said: hello v03" || got.Send.History != 1 || got.Second.ContextID != got.Send.ContextID || got.Second.Text != "You said: second v03" {
		t.Errorf("send %+v, second %+v", got.Send, got.Second)
	}
	if got.Get.State != "COMPLETED" || got.Get.Text != got.Send.Text {
		t.Errorf("get %+v", got.Get)
	}
	if s := got.Stream; len(s.Kinds) == 0 || s.Kinds[0] != "task" || s.Text != llmtest.Tokens(100) || s.Artifacts < 2 || len(s.States) == 0 || s.States[len(s.States)-1] != "COMPLETED" {
		t.Errorf("message/stream: kinds %v, %d artifact updates, states %v, text %d bytes", s.Kinds, s.Artifacts, s.States, len(s.Text))
	}
	r := got.Resub
	whole := llmtest.Tokens(300)
	if r.Before == "" || !strings.HasPrefix(r.Snapshot.Text, r.Before) || r.Snapshot.Text+r.Later != whole || r.Whole != whole || len(r.States) == 0 || r.States[len(r.States)-1] != "COMPLETED" {
		t.Errorf("tasks/resubscribe: before %d bytes, snapshot %d bytes (%s), later %d bytes, states %v; want %d bytes in all, once",
			len(r.Before), len(r.Snapshot.Text), r.Snapshot.State, len(r.Later), r.States, len(whole))
	}
	if got.Cancel.State != "CANCELED" || !strings.Contains(got.Cancel.Again, "TaskNotCancelableError") {
		t.Errorf("tasks/cancel %+v", got.Cancel)
	}
	if a := got.Approval; a.State != "INPUT_REQUIRED" || a.Waiting != 1 || a.After.State != "COMPLETED" || !strings.Contains(a.After.Text, "ping v03") {
		t.Errorf("approval over 0.3 %+v", a)
	}
	if pu := got.Push; !pu.Made || !pu.Task || pu.Listed != 1 || !pu.Got || pu.After != 0 {
		t.Errorf("tasks/pushNotificationConfig/* %+v", pu)
	}
	if !strings.Contains(got.UnknownTask, "TaskNotFoundError") {
		t.Errorf("unknown task: %s", got.UnknownTask)
	}
	if w := got.Raw03; w.Kind != "task" || w.State != "completed" || w.Text != "You said: raw v03" || w.PartKind != "text" || !w.Final || w.List != -32601 ||
		strings.Join(w.StreamKinds, ",") != "task,artifact-update,status-update" {
		t.Errorf("0.3 on the wire: %+v", w)
	}
	want := map[string]any{
		"SendMessage": "TASK_STATE_COMPLETED", "SendStreamingMessage": "TASK_STATE_COMPLETED", "GetTask": "TASK_STATE_COMPLETED",
		"ListTasks": 2.0, "CancelTask": -32002.0, "SubscribeToTask": true,
		"CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": "http://127.0.0.1:9/x",
		"ListTaskPushNotificationConfigs": 1.0, "DeleteTaskPushNotificationConfig": true,
		"GetExtendedAgentCard": -32007.0, "unknown": -32601.0,
	}
	for m, w := range want {
		if got.V1[m] != w {
			t.Errorf("a raw %s frame: got %v, want %v", m, got.V1[m], w)
			if m == "SendStreamingMessage" {
				t.Logf("its frames: %.4000s\nagentik logs:\n%s", got.V1StreamFrames, p.logs)
			}
		}
	}
}
