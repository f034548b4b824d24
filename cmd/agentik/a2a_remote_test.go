package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// remoteA2A starts testdata/a2a_remote.mjs (an @a2a-js/sdk server) and
// returns its base URL.
func remoteA2A(t *testing.T, token string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "a2a_remote.mjs"))
	cmd.Env = append(append(os.Environ(), "REMOTE_TOKEN="+token), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the remote A2A agent did not start: %v\n%s", err, stderr.String())
	}
	var l struct{ Port int }
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Port == 0 {
		t.Fatalf("the remote A2A agent printed %q", line)
	}
	return "http://127.0.0.1:" + strconv.Itoa(l.Port)
}

// TestRemoteA2ADelegate: a local agent delegates to a remote A2A agent
// (@a2a-js/sdk's server, started here) defined in AGENTIK_AGENTS with its
// URL and a bearer token. The fake model calls agent__remote; the child
// conversation's text streams live (the parent's tool card follows it)
// while the remote task runs; the remote cuts the first stream after a
// few events, agentik resubscribes to the task, and the answer arrives
// whole and once: in the child's answer, the call's result and the
// parent's reply.
func TestRemoteA2ADelegate(t *testing.T) {
	t.Parallel()
	const token = "remote-secret"
	remote := remoteA2A(t, token)
	_, fakeURL := llmtest.NewHTTPServer(t)
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.json")
	conf := `{"agents":[{"slug":"helper","name":"Helper","tools":["agent__remote"]},` +
		`{"slug":"remote","name":"Remote","description":"an agent of another runtime","a2a":{"url":"` + remote + `","token":"${REMOTE_TOKEN}"}}]}`
	if err := os.WriteFile(agents, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_AGENTS="+agents, "REMOTE_TOKEN="+token)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := dialAgentWS(t, ctx, p)
	var conv agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"agent":"helper"}`, &conv)
	ws.subscribe(conv.ID)
	sendAsync(t, p, conv.ID, `[[tool=agent__remote args={\"message\":\"find x\"}]]`)
	d := ws.next(func(e agentWSEvent) bool {
		return e.conv == conv.ID && e.ev.Event != nil && e.ev.Event.Type == agent.EventDelegation
	})
	child := d.ev.Event.ChildID
	if d.ev.Event.Agent != "remote" || child == "" {
		t.Fatalf("delegation event %+v", d.ev.Event)
	}
	ws.subscribe(child)
	resp, err := http.Get(remote + "/go") // the remote task may answer now
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	whole := "remote answer to find x "
	var words []string
	for i := 1; i <= 30; i++ {
		words = append(words, "w"+strconv.Itoa(i))
	}
	whole += strings.Join(words, " ")
	var text strings.Builder
	pieces := 0
	for text.Len() < len(whole) {
		e := ws.next(func(e agentWSEvent) bool {
			return e.conv == child && e.ev.Event != nil && e.ev.Event.Type == agent.EventAppendText
		})
		text.WriteString(e.ev.Event.Text)
		pieces++
	}
	if text.String() != whole || pieces < 5 {
		t.Errorf("the child streamed %q in %d pieces, want %q", text.String(), pieces, whole)
	}
	ms := idle(t, p, conv.ID)
	var result agent.Message
	for _, m := range ms {
		if m.Type == agent.MessageToolResult {
			result = m
		}
	}
	if result.Result != whole || result.ChildID != child || result.IsError {
		t.Errorf("tool result %+v", result)
	}
	if a := lastAnswer(ms); a.Content[0].Body != "tool said: "+whole {
		t.Errorf("parent's answer %+v", a)
	}
	if a := lastAnswer(idle(t, p, child)); a.Agent != "remote" || a.Content[0].Body != whole {
		t.Errorf("child's answer %+v", a)
	}
	var stats struct{ Sends, Subscribes, Drops, Refused, Executed int }
	getJSON(t, remote+"/stats", &stats)
	if stats.Sends != 1 || stats.Executed != 1 || stats.Drops != 1 || stats.Subscribes < 1 || stats.Refused != 0 {
		t.Errorf("the remote served %+v: want one send, cut once, resubscribed, every request with the token", stats)
	}
	// The stored definition keeps the URL, never the token.
	var def agent.AgentDef
	getJSON(t, p.url("/agentik/agents/remote"), &def)
	if def.A2A != remote {
		t.Errorf("remote agent's definition %+v", def)
	}
	if b, _ := json.Marshal(def); strings.Contains(string(b), token) {
		t.Errorf("the definition shows the token: %s", b)
	}
}

// TestRemoteA2ADelegateAcrossKill9: agentik is killed with SIGKILL while a
// local agent's delegation to a remote A2A agent streams (the remote,
// @a2a-js/sdk's server, pauses after five words), and restarted. Nothing
// acknowledged is lost and the parent's call ends answered: the child
// keeps the words it had streamed (an interrupted answer, then the
// restart's error), and the parent's call gets an is_error result that
// links the child and says the work was cut off, before the parent's
// turn ends with interrupted_by_restart. The conversation takes the next
// message.
func TestRemoteA2ADelegateAcrossKill9(t *testing.T) {
	t.Parallel()
	const token = "remote-secret"
	remote := remoteA2A(t, token, "REMOTE_PAUSE=5")
	_, fakeURL := llmtest.NewHTTPServer(t)
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.json")
	conf := `{"agents":[{"slug":"helper","name":"Helper","tools":["agent__remote"]},` +
		`{"slug":"remote","name":"Remote","a2a":{"url":"` + remote + `","token":"${REMOTE_TOKEN}"}}]}`
	if err := os.WriteFile(agents, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, db := freeAddr(t), filepath.Join(dir, "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_AGENTS=" + agents, "REMOTE_TOKEN=" + token}
	p := start(t, addr, db, env...)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := dialAgentWS(t, ctx, p)
	var conv agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"agent":"helper"}`, &conv)
	ws.subscribe(conv.ID)
	sendAsync(t, p, conv.ID, `[[tool=agent__remote args={\"message\":\"find x\"}]]`)
	d := ws.next(func(e agentWSEvent) bool {
		return e.conv == conv.ID && e.ev.Event != nil && e.ev.Event.Type == agent.EventDelegation
	})
	child := d.ev.Event.ChildID
	ws.subscribe(child)
	getJSON(t, remote+"/go", &struct{}{})
	const before = "remote answer to find x" // the five words before the pause
	var text strings.Builder
	for text.Len() < len(before) {
		e := ws.next(func(e agentWSEvent) bool {
			return e.conv == child && e.ev.Event != nil && e.ev.Event.Type == agent.EventAppendText
		})
		text.WriteString(e.ev.Event.Text)
	}
	if text.String() != before {
		t.Fatalf("the child streamed %q before the pause, want %q", text.String(), before)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start(t, addr, db, env...)

	ms := idle(t, p, conv.ID)
	var result agent.Message
	for _, m := range ms {
		if m.Type == agent.MessageToolResult {
			result = m
		}
	}
	if !result.IsError || result.ChildID != child || !strings.Contains(result.Result, "restarted while agent remote worked") || !strings.Contains(result.Result, child) {
		t.Errorf("the parent's call after kill -9: %+v", result)
	}
	// The parent's turn is continued: the model reads the call's result.
	if last := ms[len(ms)-1]; last.Type != agent.MessageAssistant || !strings.Contains(last.Content[0].Body, "interrupted by a restart") {
		t.Errorf("the parent's turn ended with %+v", last)
	}
	cms := idle(t, p, child)
	if a := lastAnswer(cms); !a.Interrupted || len(a.Content) == 0 || a.Content[0].Body != before {
		t.Errorf("the child's kept answer %+v, want %q marked interrupted", a, before)
	}
	if last := cms[len(cms)-1]; last.Type != agent.MessageError || last.Code != agent.CodeInterruptedByRestart {
		t.Errorf("the child's turn ended with %+v", last)
	}
	getJSON(t, remote+"/go2", &struct{}{}) // the remote task finishes; nobody follows it

	// The conversation goes on.
	postJSON(t, p.url("/agentik/conversations/"+conv.ID+"/send"), `{"content":[{"type":"text","body":"after the restart"}]}`, nil)
	if a := lastAnswer(idle(t, p, conv.ID)); len(a.Content) == 0 || a.Content[0].Body != "You said: after the restart" {
		t.Errorf("the next answer %+v", a)
	}
}
