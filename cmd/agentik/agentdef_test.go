package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// agentEnv starts the fake model as provider "a" with models alpha (the
// default) and beta, and writes an AGENTIK_AGENTS file with agents.
func agentEnv(t *testing.T, script func(llmtest.Request) llmtest.Reply, agents string) (*llmtest.Server, []string) {
	t.Helper()
	opts := []llmtest.Option{llmtest.WithModels("alpha", "beta")}
	if script != nil {
		opts = append(opts, llmtest.WithScript(script))
	}
	fake, url := llmtest.NewHTTPServer(t, opts...)
	dir := t.TempDir()
	providers := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(providers, []byte(`{"providers":{"a":{"base_url":"`+url+`","models":["alpha","beta"]}},"default":"a/alpha"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AGENTIK_PROVIDERS=" + providers, "AGENTIK_SYSTEM_PROMPT=the server's prompt"}
	if agents != "" {
		file := filepath.Join(dir, "agents.json")
		if err := os.WriteFile(file, []byte(agents), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "AGENTIK_AGENTS="+file, "GREETING=Hello from code")
	}
	return fake, env
}

// httpCall sends a JSON request and returns the status and body.
func httpCall(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sendAsync sends a message over REST without waiting for the turn (the
// answer streams until the turn ends).
func sendAsync(t *testing.T, p *proc, id, text string) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wg.Go(func() {
		resp, err := http.Post(p.url("/agentik/conversations/"+id+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"`+text+`"}]}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// idle waits until the conversation's turn has ended and returns its
// history: it follows the agent stream live, then asks whether a turn
// runs, so a turn_ended after the subscription cannot be missed.
func idle(t *testing.T, p *proc, id string) []agent.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := sse(t, ctx, "", p.url("/agentik/events"), "")
	var c agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+id), &c)
	for c.Running || c.MessageCount == 0 {
		ev, ok := <-evs
		if !ok {
			t.Fatalf("conversation %s still running after 30 s: %+v\nlogs:\n%s", id, c, p.logs)
		}
		var e agent.AgentEvent
		if json.Unmarshal([]byte(ev.data), &e) == nil && e.ConversationID == id && e.Type == agent.AgentTurnEnded {
			getJSON(t, p.url("/agentik/conversations/"+id), &c)
		}
	}
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+id+"/messages"), &hist)
	return hist.Messages
}

func lastAnswer(ms []agent.Message) agent.Message {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Type == agent.MessageAssistant {
			return ms[i]
		}
	}
	return agent.Message{}
}

func systemOf(r llmtest.Request) string {
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		return r.Messages[0].Content
	}
	return ""
}

// TestAgentsDefineAndRun: the real binary with the fake model. Agents from
// AGENTIK_AGENTS and the default are listed; a created agent's
// instructions and model reach the model request of a conversation on
// it; an edit is a new version, and each answer records the version its
// turn ran with; /v1 answers as agent/<slug>; bad definitions are typed
// errors naming the field, with nothing stored; deleting an agent in use
// marks it deleted and its conversation goes on.
func TestAgentsDefineAndRun(t *testing.T) {
	t.Parallel()
	fake, env := agentEnv(t, nil, `{"agents":[{"slug":"greeter","name":"Greeter","instructions":"${GREETING}","starters":["Say hi"]}]}`)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), env...)

	var list protocol.AgentsResult
	getJSON(t, p.url("/agentik/agents"), &list)
	if len(list.Agents) != 2 || list.Agents[0].Slug != "agentik" || !list.Agents[0].ReadOnly || list.Agents[1].Slug != "greeter" || list.Agents[1].Instructions != "Hello from code" {
		t.Fatalf("agents at start: %+v", list.Agents)
	}
	if code, b := httpCall(t, "PATCH", p.url("/agentik/agents/greeter"), `{"name":"x"}`); code != 403 {
		t.Errorf("editing a code agent: %d %s", code, b)
	}

	var res agent.AgentDef
	postJSON(t, p.url("/agentik/agents"), `{"slug":"researcher","name":"Researcher","instructions":"You research.","model":"a/beta","params":{"temperature":0.3},"starters":["Find X"]}`, &res)
	if res.Version != 1 || res.Owner != agent.LocalUser || res.Visibility != agent.VisibilityPrivate {
		t.Fatalf("created %+v", res)
	}

	for _, c := range []struct{ body, code, field string }{
		{`{"slug":"researcher","name":"again"}`, "conflict", "taken"},
		{`{"slug":"Not Safe","name":"x"}`, "bad_request", "slug"},
		{`{"slug":"m","model":"a/gamma"}`, "bad_request", "a/gamma"},
		{`{"slug":"t","tools":["nothing__*"]}`, "bad_request", "tools[0]"},
		{`{"slug":"d","tools":["agent__ghost"]}`, "bad_request", "tools[0]"},
		{`{"slug":"u","instruction":"typo"}`, "bad_request", "instruction"},
		{`{"slug":"v","visibility":"public"}`, "bad_request", "visibility"},
	} {
		code, b := httpCall(t, "POST", p.url("/agentik/agents"), c.body)
		var e agent.Error
		_ = json.Unmarshal(b, &e)
		if code/100 != 4 || e.Code != c.code || !strings.Contains(e.Message, c.field) {
			t.Errorf("POST %s: %d %s, want %s naming %q", c.body, code, b, c.code, c.field)
		}
	}
	getJSON(t, p.url("/agentik/agents"), &list)
	if len(list.Agents) != 3 {
		t.Errorf("bad definitions stored something: %+v", list.Agents)
	}

	// A conversation on the agent: its instructions, model and params reach the model.
	var conv agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"agent":"researcher"}`, &conv)
	if conv.Agent != "researcher" {
		t.Fatalf("conversation %+v", conv)
	}
	if code, b := httpCall(t, "POST", p.url("/agentik/conversations"), `{"agent":"nobody"}`); code != 404 || !strings.Contains(string(b), "nobody") {
		t.Errorf("conversation on an unknown agent: %d %s", code, b)
	}
	postJSON(t, p.url("/agentik/conversations/"+conv.ID+"/send"), `{"content":[{"type":"text","body":"first"}]}`, nil)
	ms := idle(t, p, conv.ID)
	reqs := fake.Requests()
	r := reqs[len(reqs)-1]
	if r.Model != "beta" || systemOf(r) != "You research." || r.Temperature == nil || *r.Temperature != 0.3 {
		t.Errorf("model request: model %q system %q temperature %v", r.Model, systemOf(r), r.Temperature)
	}
	if a := lastAnswer(ms); a.Agent != "researcher" || a.AgentVersion != 1 || a.Content[0].Body != "You said: first" {
		t.Errorf("first answer %+v", a)
	}

	// An edit is version 2; the next turn runs with it and says so.
	var v2 agent.AgentDef
	requestJSON(t, "PATCH", p.url("/agentik/agents/researcher"), `{"instructions":"You research, v2."}`, nil, &v2)
	if v2.Version != 2 || v2.Model != "a/beta" {
		t.Fatalf("edited %+v", v2)
	}
	postJSON(t, p.url("/agentik/conversations/"+conv.ID+"/send"), `{"content":[{"type":"text","body":"second"}]}`, nil)
	ms = idle(t, p, conv.ID)
	reqs = fake.Requests()
	if r := reqs[len(reqs)-1]; systemOf(r) != "You research, v2." {
		t.Errorf("after the edit the system prompt is %q", systemOf(r))
	}
	var versions []int
	for _, m := range ms {
		if m.Type == agent.MessageAssistant {
			versions = append(versions, m.AgentVersion)
		}
	}
	if len(versions) != 2 || versions[0] != 1 || versions[1] != 2 {
		t.Errorf("versions per turn %v", versions)
	}

	// /v1 with agent/<slug>: listed, and answered by the agent.
	var models struct{ Data []struct{ ID string } }
	getJSON(t, p.url("/v1/models"), &models)
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if !contains(ids, "agent/researcher") || !contains(ids, "agent/greeter") || contains(ids, "agent/agentik") {
		t.Errorf("/v1/models %v", ids)
	}
	var comp struct {
		Choices []struct{ Message struct{ Content string } }
	}
	postJSON(t, p.url("/v1/chat/completions"), `{"model":"agent/researcher","messages":[{"role":"user","content":"via v1"}]}`, &comp)
	reqs = fake.Requests()
	if r := reqs[len(reqs)-1]; r.Model != "beta" || systemOf(r) != "You research, v2." || len(comp.Choices) != 1 || comp.Choices[0].Message.Content != "You said: via v1" {
		t.Errorf("/v1 agent/researcher: request model %q system %q, answer %+v", r.Model, systemOf(r), comp)
	}
	if code, b := httpCall(t, "POST", p.url("/v1/chat/completions"), `{"model":"agent/ghost","messages":[{"role":"user","content":"x"}]}`); code != 404 || !strings.Contains(string(b), "model_not_found") {
		t.Errorf("/v1 agent/ghost: %d %s", code, b)
	}

	// The default agent changes nothing: the server's prompt and model.
	var plain agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &plain)
	postJSON(t, p.url("/agentik/conversations/"+plain.ID+"/send"), `{"content":[{"type":"text","body":"plain"}]}`, nil)
	idle(t, p, plain.ID)
	reqs = fake.Requests()
	if r := reqs[len(reqs)-1]; r.Model != "alpha" || systemOf(r) != "the server's prompt" {
		t.Errorf("default agent: model %q system %q", r.Model, systemOf(r))
	}

	// Deleting an agent in use marks it deleted; its conversation goes on.
	if code, b := httpCall(t, "DELETE", p.url("/agentik/agents/researcher"), ""); code != 204 {
		t.Fatalf("delete: %d %s", code, b)
	}
	getJSON(t, p.url("/agentik/agents"), &list)
	for _, a := range list.Agents {
		if a.Slug == "researcher" {
			t.Errorf("deleted agent listed: %+v", a)
		}
	}
	var gone agent.AgentDef
	getJSON(t, p.url("/agentik/agents/researcher"), &gone)
	if !gone.Deleted {
		t.Errorf("deleted agent reads %+v", gone)
	}
	postJSON(t, p.url("/agentik/conversations/"+conv.ID+"/send"), `{"content":[{"type":"text","body":"third"}]}`, nil)
	if a := lastAnswer(idle(t, p, conv.ID)); a.Content[0].Body != "You said: third" || a.Agent != "researcher" {
		t.Errorf("after delete %+v", a)
	}
}

// TestAgentsFileErrorsStopStart: an unknown field, a tool pattern naming
// no tool server, and a cycle in AGENTIK_AGENTS each stop the start with an
// error naming it.
func TestAgentsFileErrorsStopStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, want string }{
		{`{"agents":[{"slug":"a","nme":"x"}]}`, `unknown field "nme"`},
		{`{"agents":[{"slug":"a","tools":["github__*"]}]}`, `"github__*" names no configured tool server`},
		{`{"agents":[{"slug":"a","tools":["agent__b"]},{"slug":"b","tools":["agent__a"]}]}`, "cycle a → b → a"},
	} {
		_, env := agentEnv(t, nil, c.file)
		cmd := exec.Command(binary, "--addr", freeAddr(t), "--db", "sqlite:"+filepath.Join(t.TempDir(), "a.db"))
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: err %v, output:\n%s\nwant it to name %q", c.file, err, out, c.want)
		}
	}
}

// agentWS is a WebSocket connection whose event frames a reader sorts by
// subscription.
type agentWS struct {
	t    *testing.T
	ctx  context.Context
	ws   *websocket.Conn
	mu   sync.Mutex
	subs map[string]string // sub id → conversation id
	evs  chan agentWSEvent
	n    int
}

type agentWSEvent struct {
	conv string
	ev   agent.AllEvent
}

func dialAgentWS(t *testing.T, ctx context.Context, p *proc) *agentWS {
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/agentik/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	c := &agentWS{t: t, ctx: ctx, ws: ws, subs: map[string]string{}, evs: make(chan agentWSEvent, 4096)}
	t.Cleanup(func() { ws.CloseNow() })
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				close(c.evs)
				return
			}
			var f protocol.Frame
			if json.Unmarshal(b, &f) != nil {
				continue
			}
			switch f.Type {
			case protocol.FrameReply:
				var r protocol.SubscribeResult
				if f.OK && json.Unmarshal(f.Result, &r) == nil && r.Sub != "" {
					c.mu.Lock()
					c.subs[r.Sub] = *f.ID
					c.mu.Unlock()
				}
			case protocol.FrameEvent:
				var ev agent.AllEvent
				if json.Unmarshal(f.Event, &ev) == nil {
					c.mu.Lock()
					conv := c.subs[f.Sub]
					c.mu.Unlock()
					c.evs <- agentWSEvent{conv, ev}
				}
			}
		}
	}()
	return c
}

// subscribe subscribes to a conversation from its start; the request id
// is the conversation id, so the reader maps the subscription to it.
func (c *agentWS) subscribe(conv string) {
	if err := c.ws.Write(c.ctx, websocket.MessageText, []byte(`{"op":"subscribe","id":"`+conv+`","stream":"conversation","conversation_id":"`+conv+`","after":0}`)); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next event that pass accepts.
func (c *agentWS) next(pass func(agentWSEvent) bool) agentWSEvent {
	c.t.Helper()
	for {
		select {
		case e, ok := <-c.evs:
			if !ok {
				c.t.Fatal("the WebSocket closed")
			}
			if pass(e) {
				return e
			}
		case <-c.ctx.Done():
			c.t.Fatal("timed out waiting for an event")
		}
	}
}

// delegationScript: the writer calls the researcher, the researcher
// answers (its stream held until childGo is closed), the writer answers
// with what the researcher said (held until parentGo is closed).
func delegationScript(childGo, parentGo chan struct{}) func(llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch sys := systemOf(r); {
		case strings.HasPrefix(sys, "You write"):
			if last.Role == "tool" {
				return llmtest.Reply{Text: "The writer reports: " + last.Content, Hold: parentGo}
			}
			return llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_d1", Name: "agent__researcher", Arguments: `{"message":"find the answer"}`}}}
		case strings.HasPrefix(sys, "You research"):
			return llmtest.Reply{Text: "the answer is 42", Hold: childGo}
		}
		return llmtest.Reply{Text: "You said: " + last.Content}
	}
}

// defineWriterAndResearcher makes the two agents over REST, and checks
// that a cycle between them is refused at definition time.
func defineWriterAndResearcher(t *testing.T, p *proc) {
	postJSON(t, p.url("/agentik/agents"), `{"slug":"researcher","name":"Researcher","instructions":"You research."}`, nil)
	postJSON(t, p.url("/agentik/agents"), `{"slug":"writer","name":"Writer","instructions":"You write.","tools":["agent__researcher"],"starters":["Write about 42"]}`, nil)
	code, b := httpCall(t, "PATCH", p.url("/agentik/agents/researcher"), `{"tools":["agent__writer"]}`)
	if code != 400 || !strings.Contains(string(b), "cycle researcher → writer → researcher") {
		t.Errorf("a cycle: %d %s", code, b)
	}
}

// TestDelegationEndToEnd: a writer that delegates to a researcher. The
// child conversation is created and linked to the call, its text is live
// on a WebSocket while the parent's turn runs, and the parent's answer
// uses the child's; the child opens on its own.
func TestDelegationEndToEnd(t *testing.T) {
	t.Parallel()
	childGo, parentGo := make(chan struct{}), make(chan struct{})
	_, env := agentEnv(t, delegationScript(childGo, parentGo), "")
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), env...)
	defineWriterAndResearcher(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := dialAgentWS(t, ctx, p)
	var conv agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"agent":"writer"}`, &conv)
	ws.subscribe(conv.ID)
	sendAsync(t, p, conv.ID, "write about the answer")

	d := ws.next(func(e agentWSEvent) bool {
		return e.conv == conv.ID && e.ev.Event != nil && e.ev.Event.Type == agent.EventDelegation
	})
	child := d.ev.Event.ChildID
	if d.ev.Event.CallID != "call_d1" || d.ev.Event.Agent != "researcher" || child == "" {
		t.Fatalf("delegation event %+v", d.ev.Event)
	}
	var cc agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+child), &cc)
	if cc.Agent != "researcher" || cc.Parent == nil || cc.Parent.ConversationID != conv.ID || cc.Parent.CallID != "call_d1" {
		t.Fatalf("child %+v", cc)
	}
	ws.subscribe(child)
	close(childGo)
	var text strings.Builder
	for !strings.Contains(text.String(), "42") {
		e := ws.next(func(e agentWSEvent) bool {
			return e.conv == child && e.ev.Event != nil && e.ev.Event.Type == agent.EventAppendText
		})
		text.WriteString(e.ev.Event.Text)
	}
	// The child's text came while the parent's turn still runs (its last
	// model call is held).
	var pc agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+conv.ID), &pc)
	if !pc.Running {
		t.Errorf("the parent ended before the child's text was seen")
	}
	close(parentGo)
	ms := idle(t, p, conv.ID)
	var result agent.Message
	for _, m := range ms {
		if m.Type == agent.MessageToolResult {
			result = m
		}
	}
	if result.Result != "the answer is 42" || result.ChildID != child {
		t.Errorf("tool result %+v", result)
	}
	if a := lastAnswer(ms); a.Content[0].Body != "The writer reports: the answer is 42" || a.Agent != "writer" {
		t.Errorf("parent's answer %+v", a)
	}
	cms := idle(t, p, child)
	if a := lastAnswer(cms); a.Agent != "researcher" || a.Content[0].Body != "the answer is 42" {
		t.Errorf("child's history %+v", cms)
	}
}

// TestDelegationInterruptReachesTheChild: interrupting the parent while
// its delegate streams interrupts the child too (docs/ARCHITECTURE.md,
// "Agents"): both turns end, the child's streamed words kept as an
// interrupted answer.
func TestDelegationInterruptReachesTheChild(t *testing.T) {
	t.Parallel()
	childGo, parentGo := make(chan struct{}), make(chan struct{})
	defer close(childGo)
	defer close(parentGo)
	script := delegationScript(childGo, parentGo)
	_, env := agentEnv(t, func(r llmtest.Request) llmtest.Reply {
		reply := script(r)
		if strings.HasPrefix(systemOf(r), "You research") {
			reply.HoldAfter = 1 // mid-answer, its first words streamed
		}
		return reply
	}, "")
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), env...)
	defineWriterAndResearcher(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := dialAgentWS(t, ctx, p)
	var conv agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"agent":"writer"}`, &conv)
	ws.subscribe(conv.ID)
	sendAsync(t, p, conv.ID, "write about the answer")
	d := ws.next(func(e agentWSEvent) bool {
		return e.conv == conv.ID && e.ev.Event != nil && e.ev.Event.Type == agent.EventDelegation
	})
	child := d.ev.Event.ChildID
	ws.subscribe(child)
	ws.next(func(e agentWSEvent) bool {
		return e.conv == child && e.ev.Event != nil && e.ev.Event.Type == agent.EventAppendText
	})

	var res map[string]bool
	postJSON(t, p.url("/agentik/conversations/"+conv.ID+"/interrupt"), ``, &res)
	if !res["interrupted"] {
		t.Fatalf("interrupt of the parent: %v", res)
	}
	if a := lastAnswer(idle(t, p, child)); !a.Interrupted || a.Agent != "researcher" {
		t.Errorf("the child's last answer %+v, want the researcher's, interrupted", a)
	}
	idle(t, p, conv.ID)
}

// TestDelegationSurvivesKill9: kill -9 while the child streams; after the
// restart both turns are continued to their end, every stored message is
// kept, and the link holds.
func TestDelegationSurvivesKill9(t *testing.T) {
	t.Parallel()
	childGo, parentGo := make(chan struct{}), make(chan struct{})
	fake, env := agentEnv(t, delegationScript(childGo, parentGo), "")
	_ = fake
	addr, db := freeAddr(t), filepath.Join(t.TempDir(), "agentik.db")
	p := start(t, addr, db, env...)
	defineWriterAndResearcher(t, p)
	var conv agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"agent":"writer"}`, &conv)
	// The child's turn (held by childGo) is the first turn to start on
	// another conversation than the parent's.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := sse(t, ctx, "", p.url("/agentik/events"), "")
	sendAsync(t, p, conv.ID, "write")
	var child agent.Conversation
	for child.ID == "" {
		ev, ok := <-evs
		if !ok {
			t.Fatalf("no child turn started within 30 s; logs:\n%s", p.logs)
		}
		var e agent.AgentEvent
		if json.Unmarshal([]byte(ev.data), &e) == nil && e.Type == agent.AgentTurnStarted && e.ConversationID != conv.ID {
			getJSON(t, p.url("/agentik/conversations/"+e.ConversationID), &child)
		}
	}
	if child.Parent == nil || child.Parent.ConversationID != conv.ID || !child.Running {
		t.Fatalf("the started child %+v is not a running child of %s", child, conv.ID)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	close(childGo)
	close(parentGo)

	// Both turns are continued: the child answers, the parent's model
	// reads that its call was interrupted by the restart.
	p = start(t, addr, db, env...)
	for id, want := range map[string]string{conv.ID: "The writer reports: error: interrupted by a restart", child.ID: "the answer is 42"} {
		ms := idle(t, p, id)
		if last := ms[len(ms)-1]; ms[0].Type != agent.MessageUser || last.Type != agent.MessageAssistant || !strings.HasPrefix(last.Content[0].Body, want) {
			t.Errorf("conversation %s after the restart: %+v", id, ms)
		}
	}
	pms := idle(t, p, conv.ID)
	if len(pms) < 2 || pms[1].Type != agent.MessageToolCall || pms[1].Name != "agent__researcher" {
		t.Errorf("the parent's tool call was lost: %+v", pms)
	}
	var cc agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+child.ID), &cc)
	if cc.Parent == nil || cc.Parent.ConversationID != conv.ID {
		t.Errorf("child after the restart %+v", cc)
	}
}

// TestCodeAgentTakesAMembersSlug: ann's private agent writer (a
// conversation, a schedule and her editor's delegation name it) does not
// stop the server from starting once AGENTIK_AGENTS defines writer: the
// operator's writer is the one everyone resolves, ann's moved to
// writer-2 with its versions, what named it follows, its new version
// says renamed_from, and the log says agent_renamed.
func TestCodeAgentTakesAMembersSlug(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "agentik.db")
	tm := startTeam(t, db)
	ann := tm.ann.key
	must(t, ann, "POST", tm.p.url("/agentik/agents"), `{"slug":"writer","name":"Ann's writer","instructions":"ann's own writer"}`, nil)
	must(t, ann, "PATCH", tm.p.url("/agentik/agents/writer"), `{"description":"second version"}`, nil)
	must(t, ann, "POST", tm.p.url("/agentik/agents"), `{"slug":"editor","tools":["agent__writer"]}`, nil)
	var conv agent.Conversation
	must(t, ann, "POST", tm.p.url("/agentik/conversations"), `{"agent":"writer"}`, &conv)
	must(t, ann, "POST", tm.p.url("/agentik/conversations/"+conv.ID+"/send"), `{"content":[{"type":"text","body":"draft"}]}`, nil)
	var sc agent.Schedule
	must(t, ann, "POST", tm.p.url("/agentik/schedules"), `{"agent":"writer","prompt":"write daily","rrule":"FREQ=DAILY"}`, &sc)
	if err := tm.p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = tm.p.cmd.Wait()

	file := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(file, []byte(`{"agents":[{"slug":"writer","name":"The operator's writer","instructions":"the operator's writer"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, freeAddr(t), db, append(slices.Clone(tm.env), "AGENTIK_AGENTS="+file)...)

	for who, key := range map[string]string{"ann": ann, "bob": tm.bob.key} {
		var w agent.AgentDef
		must(t, key, "GET", p.url("/agentik/agents/writer"), "", &w)
		if !w.ReadOnly || w.Instructions != "the operator's writer" || w.Version != 1 {
			t.Errorf("writer for %s is not the operator's: %+v", who, w)
		}
	}
	var moved agent.AgentDef
	must(t, ann, "GET", p.url("/agentik/agents/writer-2"), "", &moved)
	if moved.Owner != tm.ann.id || moved.RenamedFrom != "writer" || moved.Version != 3 || moved.Instructions != "ann's own writer" || moved.Description != "second version" || moved.ReadOnly {
		t.Errorf("ann's writer after the restart: %+v", moved)
	}
	if code, b := call(t, tm.bob.key, "GET", p.url("/agentik/agents/writer-2"), ""); code != 404 {
		t.Errorf("bob reads ann's private writer-2: %d %s", code, b)
	}
	var ed agent.AgentDef
	must(t, ann, "GET", p.url("/agentik/agents/editor"), "", &ed)
	if !slices.Equal(ed.Tools, []string{"agent__writer-2"}) || ed.Version != 2 {
		t.Errorf("ann's editor still delegates to %v (version %d), want agent__writer-2", ed.Tools, ed.Version)
	}
	var c agent.Conversation
	must(t, ann, "GET", p.url("/agentik/conversations/"+conv.ID), "", &c)
	if c.Agent != "writer-2" {
		t.Errorf("ann's conversation names agent %q, want writer-2", c.Agent)
	}
	var scs struct{ Schedules []agent.Schedule }
	must(t, ann, "GET", p.url("/agentik/schedules"), "", &scs)
	if len(scs.Schedules) != 1 || scs.Schedules[0].Agent != "writer-2" {
		t.Errorf("ann's schedules after the restart: %+v", scs.Schedules)
	}
	// Her conversation runs on her agent, not on the operator's.
	must(t, ann, "POST", p.url("/agentik/conversations/"+conv.ID+"/send"), `{"content":[{"type":"text","body":"again"}]}`, nil)
	// The turn's request, not a title call that may come after it.
	var got string
	for _, r := range slices.Backward(tm.fake.Requests()) {
		if s := systemOf(r); !strings.HasPrefix(s, "Write a title") {
			got = s
			break
		}
	}
	if !strings.Contains(got, "ann's own writer") {
		t.Errorf("ann's conversation ran with system prompt %q, want her writer's", got)
	}
	if !strings.Contains(p.logs.String(), "msg=agent_renamed from=writer to=writer-2 owner="+tm.ann.id) {
		t.Errorf("no agent_renamed log line; logs:\n%s", p.logs)
	}
}
