package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// binary is the agentik binary built once for the process tests; with
// -trimpath, so that TestVersionNamesRevision's build of a clone (another
// directory) finds every package in the build cache and only links.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentik-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agentik")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build agentik: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a running agentik binary.
type proc struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
}

func start(t testing.TB, addr, db string, env ...string) *proc {
	t.Helper()
	return startArgs(t, addr, db, nil, env...)
}

// startArgs is start with more flags.
func startArgs(t testing.TB, addr, db string, args []string, env ...string) *proc {
	t.Helper()
	dsn := db // a SQLite file, or a postgres:// URL
	if !strings.Contains(db, "://") {
		dsn = "sqlite:" + db
	}
	cmd := exec.Command(binary, append([]string{"--addr", addr, "--db", dsn}, args...)...)
	// AGENTIK_TITLES=first_line: with a model, agentik names a
	// conversation by a model call after its first answer, in the
	// background. A test that queues the fake model's replies for its next
	// turn once the first has ended would race that call for them (ci2 of
	// session 9: TestEverythingResources' second turn got the default
	// echo). A test of the model's titles says AGENTIK_TITLES=model in env,
	// which comes later and wins.
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "AGENTIK_TITLES=first_line"}
	if m := os.Getenv("AGENTIK_STORE_MODE"); m != "" {
		base = append(base, "AGENTIK_STORE_MODE="+m) // the store's mode under test (Taskfile's test-plain); env may name another
	}
	cmd.Env = append(base, env...)
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, addr: addr, logs: logs}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Healthy, and ours: a port taken by freeAddr may be someone else's
	// by now (parallel tests), so the process must have logged that it
	// listens there; one that failed to bind says why in its logs.
	testwait.ForErr(t, "agentik to become healthy", func() error {
		if !strings.Contains(logs.String(), "msg=listening addr="+addr+" ") {
			return fmt.Errorf("agentik has not logged that it listens on %s; logs:\n%s", addr, logs)
		}
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("/health answered %d; logs:\n%s", resp.StatusCode, logs)
		}
		return nil
	})
	return p
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

func postJSON(t testing.TB, url, body string, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
}

// longTurn is the real binary with the fake model, in the middle of a long
// streamed answer read by resp: the model has streamed its first
// heldAfter words and holds the rest until hold is closed.
type longTurn struct {
	p    *proc
	fake *llmtest.Server
	conv agent.Conversation
	resp *http.Response
	hold chan struct{}
	// restart is the binary again, on the same address and database,
	// with env added to the first start's.
	restart func(env ...string) *proc
	db      string // the SQLite database's path
}

// heldAfter is how many words of its answer a longTurn's model streams
// before it holds.
const heldAfter = 50

// heldText is the text a longTurn's model streamed before it held.
var heldText = "token" + strings.Repeat(" token", heldAfter-1)

func startLongTurn(t *testing.T, env ...string) longTurn {
	t.Helper()
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), HoldAfter: heldAfter, Hold: hold})
	db := filepath.Join(t.TempDir(), "agentik.db")
	addr := freeAddr(t)
	env = append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake"}, env...)
	lt := longTurn{p: start(t, addr, db, env...), fake: fake, db: db, hold: hold}
	lt.restart = func(more ...string) *proc { return start(t, addr, db, append(env, more...)...) }
	postJSON(t, lt.p.url("/agentik/conversations"), `{}`, &lt.conv)
	resp, err := http.Post(lt.p.url("/agentik/conversations/"+lt.conv.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"talk"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lt.resp = resp
	return lt
}

// sseText reads an agentik SSE stream until its text is want (or until
// its end event, when want is ""): the ids of the frames read, the text,
// and the last id.
func sseText(t *testing.T, sc *bufio.Scanner, want string) (ids []string, text string, last string) {
	t.Helper()
	var b strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids, last = append(ids, id), id
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev agent.Event
			if json.Unmarshal([]byte(data), &ev) == nil {
				if ev.Type == agent.EventAppendText {
					b.WriteString(ev.Text)
				}
				if want == "" && ev.Type == agent.EventEnd {
					return ids, b.String(), last
				}
			}
			if want != "" && b.String() == want {
				return ids, b.String(), last
			}
		}
	}
	t.Fatalf("the stream ended (%v) after %q", sc.Err(), b.String())
	return nil, "", ""
}

// TestKill9MidTurn kills the real binary in the middle of a streamed
// answer and restarts it: the turn is continued (the model asked again
// with the kept answer) and ends completed with the whole answer; an SSE
// client that resumes from its last event id sees the rest exactly once;
// every event a client saw before the kill is still in the log.
func TestKill9MidTurn(t *testing.T) {
	t.Parallel()
	lt := startLongTurn(t)
	p, c, fake := lt.p, lt.conv, lt.fake
	ids, saw, last := sseText(t, bufio.NewScanner(lt.resp.Body), heldText)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	fake.Enqueue(llmtest.Reply{Text: " and the rest."})
	p = lt.restart()
	req, _ := http.NewRequest("GET", p.url("/agentik/conversations/"+c.ID+"/events"), nil)
	req.Header.Set("Last-Event-ID", last)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	more, rest, _ := sseText(t, bufio.NewScanner(resp.Body), "")
	whole := heldText + " and the rest."
	if saw+rest != whole {
		t.Fatalf("the client saw %q then, resuming, %q; want %q once", saw, rest, whole)
	}
	seen := map[string]bool{}
	for _, id := range append(ids, more...) {
		if seen[id] {
			t.Fatalf("event %s delivered twice", id)
		}
		seen[id] = true
	}
	reqs := fake.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if n := len(msgs); n < 2 || msgs[n-2].Role != "assistant" || msgs[n-2].Content != heldText {
		t.Fatalf("the continuation request does not carry the kept answer: %+v", msgs)
	}
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	if got := hist.Messages[len(hist.Messages)-1]; got.Type != agent.MessageAssistant || got.Interrupted || got.Content[0].Body != whole {
		t.Fatalf("after the restart the last message is %+v", got)
	}
	var conv agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+c.ID), &conv)
	if conv.Running {
		t.Error("conversation still running after the continued turn ended")
	}
	var page struct{ Events []agent.AllEvent }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/events/replay?limit=1000"), &page)
	stored := map[string]bool{}
	for _, e := range page.Events {
		stored[fmt.Sprint(e.Seq)] = true
	}
	for seq := range seen {
		if !stored[seq] {
			t.Errorf("event %s was delivered but is not in the log", seq)
		}
	}
	// Once each and in order, though the deltas were in the delta log
	// beside the database and the rest in it (internal/store/deltalog.go).
	evIDs := map[string]bool{}
	for i, e := range page.Events {
		if evIDs[e.ID] || (i > 0 && e.Seq <= page.Events[i-1].Seq) {
			t.Fatalf("event %d (seq %d, id %s) is repeated or out of order", i, e.Seq, e.ID)
		}
		evIDs[e.ID] = true
	}
	// (Whether the held words reached the delta log depends on how the
	// writer grouped them with the turn's first events; the delta log
	// across a kill is TestKilledThenTheOtherStoreMode's and the store's
	// TestDeltaLogCutsUnfinishedCommit.)

	// The conversation works again.
	fake.Enqueue(llmtest.Reply{Text: "back"})
	resp2, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"again"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if !strings.Contains(string(body), "event: end") || !strings.Contains(string(body), `"text":"back"`) {
		t.Fatalf("turn after restart: %s", body)
	}
}

func getJSON(t testing.TB, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// TestGracefulShutdown sends SIGTERM while a turn streams: new sends get
// unavailable with a retry hint, the running turn finishes (the drain)
// and the process exits. Then, with AGENTIK_DRAIN_TIMEOUT=0, SIGTERM stops
// a turn mid-answer and the next start continues it to its end.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	lt := startLongTurn(t)
	p, c := lt.p, lt.conv
	sc := bufio.NewScanner(lt.resp.Body)
	sseText(t, sc, heldText)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	testwait.For(t, "agentik to begin its shutdown", func() bool { return strings.Contains(p.logs.String(), "msg=shutting_down") })
	var other agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &other)
	resp, err := http.Post(p.url("/agentik/conversations/"+other.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"late"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"unavailable"`) || !strings.Contains(string(body), "again in a few seconds") {
		t.Fatalf("a send while draining: %d %s", resp.StatusCode, body)
	}
	select {
	case err := <-done:
		t.Fatalf("exited (%v) before its running turn finished", err)
	default:
	}
	close(lt.hold)
	_, rest, _ := sseText(t, sc, "")
	if err := <-done; err != nil {
		t.Fatalf("exit: %v\n%s", err, p.logs)
	}
	whole := strings.Repeat("token ", 2000)
	if heldText+rest != whole {
		t.Fatalf("the drained turn streamed %d bytes, want %d", len(heldText+rest), len(whole))
	}

	// A drain shorter than the turn: it is continued after the start.
	lt.fake.Enqueue(llmtest.Reply{Text: "again and again", HoldAfter: 2, Hold: make(chan struct{})})
	p = lt.restart("AGENTIK_DRAIN_TIMEOUT=0")
	resp, err = http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"more"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sseText(t, bufio.NewScanner(resp.Body), "again and")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.logs)
	}
	lt.fake.Enqueue(llmtest.Reply{Text: " again."})
	p = lt.restart()
	testwait.For(t, "the continued turn to end", func() bool {
		var conv agent.Conversation
		getJSON(t, p.url("/agentik/conversations/"+c.ID), &conv)
		return !conv.Running
	})
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	if last := hist.Messages[len(hist.Messages)-1]; last.Type != agent.MessageAssistant || last.Interrupted || last.Content[0].Body != "again and again." {
		t.Fatalf("after the restart the last message is %+v", last)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name    string
		args    []string
		getenv  func(string) string
		addr    string
		db      string
		wantErr string
	}{
		{"defaults", nil, env(), "127.0.0.1:8080", "sqlite:./agentik.db", ""},
		{"aliases", nil, env("AGENTIK_PORT", "9000", "AGENTIK_DB_PATH", "/x.db"), "127.0.0.1:9000", "sqlite:/x.db", ""},
		{"new names win", nil, env("AGENTIK_PORT", "9000", "AGENTIK_ADDR", "127.0.0.1:9100"), "127.0.0.1:9100", "sqlite:./agentik.db", ""},
		{"flags win", []string{"--addr", "127.0.0.1:7000", "--db", "postgres://x"}, env("AGENTIK_ADDR", "127.0.0.1:9100"), "127.0.0.1:7000", "postgres://x", ""},
		{"public needs keys", []string{"--addr", "0.0.0.0:80"}, env(), "", "", "AGENTIK_API_KEYS"},
		{"keys of commas only", nil, env("AGENTIK_API_KEYS", ","), "", "", "AGENTIK_API_KEYS"},
		{"keys of blanks only", nil, env("AGENTIK_API_KEYS", " "), "", "", "AGENTIK_API_KEYS"},
		{"public with insecure", []string{"--addr", "0.0.0.0:80", "--insecure"}, env(), "0.0.0.0:80", "sqlite:./agentik.db", ""},
		{"google backend", nil, env("AGENTIK_LLM_BACKEND", "google"), "", "", "llama.cpp"},
		{"bad ttl", nil, env("AGENTIK_EVENT_TTL", "soon"), "", "", "AGENTIK_EVENT_TTL"},
		{"bad answer cap", nil, env("AGENTIK_MAX_ANSWER_BYTES", "lots"), "", "", "AGENTIK_MAX_ANSWER_BYTES"},
		{"bad context window", nil, env("AGENTIK_CONTEXT_WINDOW", "8k"), "", "", "AGENTIK_CONTEXT_WINDOW"},
		{"tiny context window", nil, env("AGENTIK_CONTEXT_WINDOW", "100"), "", "", "AGENTIK_CONTEXT_WINDOW"},
		{"context window", nil, env("AGENTIK_CONTEXT_WINDOW", "32768"), "127.0.0.1:8080", "sqlite:./agentik.db", ""},
		{"bad approval timeout", nil, env("AGENTIK_APPROVAL_TIMEOUT", "ten minutes"), "", "", "AGENTIK_APPROVAL_TIMEOUT"},
		{"negative approval timeout", nil, env("AGENTIK_APPROVAL_TIMEOUT", "-5m"), "", "", "AGENTIK_APPROVAL_TIMEOUT"},
		{"tiny approval timeout", nil, env("AGENTIK_APPROVAL_TIMEOUT", "10ms"), "", "", "AGENTIK_APPROVAL_TIMEOUT"},
		{"bad drain timeout", nil, env("AGENTIK_DRAIN_TIMEOUT", "soon"), "", "", "AGENTIK_DRAIN_TIMEOUT"},
		{"negative drain timeout", nil, env("AGENTIK_DRAIN_TIMEOUT", "-1s"), "", "", "AGENTIK_DRAIN_TIMEOUT"},
		{"bad continuations", nil, env("AGENTIK_TURN_CONTINUATIONS", "-1"), "", "", "AGENTIK_TURN_CONTINUATIONS"},
		{"bad recover interval", nil, env("AGENTIK_RECOVER_INTERVAL", "10ms"), "", "", "AGENTIK_RECOVER_INTERVAL"},
		{"drain and continuations", nil, env("AGENTIK_DRAIN_TIMEOUT", "0", "AGENTIK_TURN_CONTINUATIONS", "5"), "127.0.0.1:8080", "sqlite:./agentik.db", ""},
		{"negative answer cap", []string{"--max-answer-bytes", "-1"}, env(), "", "", "max-answer-bytes"},
		{"bad addr", []string{"--addr", "8080"}, env(), "", "", "host:port"},
		{"bad webhook url", nil, env("AGENTIK_WEBHOOKS", "http://ok.example/x,ftp://nope", "AGENTIK_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "", "", "AGENTIK_WEBHOOKS"},
		{"webhook without secret", nil, env("AGENTIK_WEBHOOKS", "http://ok.example/x"), "", "", "AGENTIK_WEBHOOK_SECRET"},
		{"bad public shares", nil, env("AGENTIK_PUBLIC_SHARES", "yes"), "", "", "AGENTIK_PUBLIC_SHARES"},
		{"public shares", nil, env("AGENTIK_PUBLIC_SHARES", "on"), "127.0.0.1:8080", "sqlite:./agentik.db", ""},
		{"webhook bad secret", nil, env("AGENTIK_WEBHOOKS", "http://ok.example/x", "AGENTIK_WEBHOOK_SECRET", "hunter2"), "", "", "AGENTIK_WEBHOOK_SECRET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, tt.getenv, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one mentioning %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Addr != tt.addr || c.DB != tt.db {
				t.Fatalf("got %s %s, want %s %s", c.Addr, c.DB, tt.addr, tt.db)
			}
		})
	}
}

func TestBadOTELEndpointFailsStart(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		switch k {
		case "OTEL_EXPORTER_OTLP_ENDPOINT":
			return "collector:4318" // no scheme
		case "AGENTIK_DB":
			return "sqlite:" + filepath.Join(t.TempDir(), "a.db")
		}
		return ""
	}
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0"}, getenv, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Fatalf("err %v, want one naming OTEL_EXPORTER_OTLP_ENDPOINT", err)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, nil, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AGENTIK_ADDR", "AGENTIK_DB", "OPENAI_BASE_URL", "AGENTIK_MCP_CONFIG", "AGENTIK_API_KEYS", "AGENTIK_EVENT_TTL"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

func TestApprovalTimeoutConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		value string
		want  time.Duration
	}{{"", 0}, {"0", 0}, {"off", 0}, {"10m", 10 * time.Minute}, {" 90s ", 90 * time.Second}} {
		c, err := parseConfig(nil, func(k string) string {
			if k == "AGENTIK_APPROVAL_TIMEOUT" {
				return tt.value
			}
			return ""
		}, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tt.value, err)
		}
		if c.ApprovalTimeout != tt.want {
			t.Errorf("AGENTIK_APPROVAL_TIMEOUT=%q: got %v, want %v", tt.value, c.ApprovalTimeout, tt.want)
		}
	}
}
