package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/testwait"
)

// The chaos test (issue 48): a client of each of the eight protocols on a
// long answer, and the binary killed with SIGKILL mid-answer, then again
// mid-continuation. Every turn must end completed with the whole answer,
// and every client must show it exactly once, having resumed by its own
// protocol's means. On PostgreSQL each kill hits the instance running the
// turns and another instance continues them.

const chaosKey = "sk-chaos"

// chaosPieces is what the model answers: the first piece, then one piece
// per continuation. Each is streamed word by word and held after its
// words (the turn provably mid-answer) until the binary is killed, except
// the last, which ends the answer. The words name their piece and place,
// so a piece seen twice or lost shows.
func chaosPieces(kills int) []string {
	pieces := make([]string, kills+1)
	for i := range pieces {
		var b strings.Builder
		for w := range 30 {
			if i > 0 || w > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "p%dw%d", i, w)
		}
		pieces[i] = b.String()
	}
	pieces[kills] += "."
	return pieces
}

// chaosReply is piece i of the answer, as the fake model streams it: held
// after the piece unless it is the last.
func chaosReply(pieces []string, i int, hold chan struct{}) llmtest.Reply {
	if i == len(pieces)-1 {
		return llmtest.Reply{Text: pieces[i]}
	}
	// What comes after the hold is never streamed: the binary dies first.
	return llmtest.Reply{Text: pieces[i] + " never sent", HoldAfter: len(strings.Fields(pieces[i])), Hold: hold}
}

// chaosProxy is the one address every client knows, as a load balancer:
// a reverse proxy to the live instance (its Host passed on, so the A2A
// card names the proxy). A killed instance's streams break at the client.
type chaosProxy struct {
	url    string
	target atomic.Pointer[url.URL]
}

func newChaosProxy(t *testing.T, addr string) *chaosProxy {
	p := &chaosProxy{}
	p.point(addr)
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.target.Load())
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	})
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	p.url = srv.URL
	return p
}

func (p *chaosProxy) point(addr string) { p.target.Store(&url.URL{Scheme: "http", Host: addr}) }

// chaosSeen is what one Go client showed: its text, the event ids (SSE)
// or seqs (WebSocket) it received, whether its turn ended.
type chaosSeen struct {
	mu      sync.Mutex
	text    string
	ids     []string
	done    bool
	resumes int
	errs    []string
}

func (s *chaosSeen) snapshot() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text, s.done
}

func (s *chaosSeen) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 20 {
		s.errs = append(s.errs, err.Error())
	}
}

// event records one event of id; it reports whether the turn ended.
func (s *chaosSeen) event(id string, ev agent.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
	if ev.Type == agent.EventAppendText {
		s.text += ev.Text
	}
	if ev.Type == agent.EventEnd {
		s.done = true
	}
	return s.done
}

// chaosUp returns once the server behind base answers /health (a client
// reconnects to a server that is there, not after a fixed pause), or ctx
// ends.
func chaosUp(ctx context.Context, base string) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// chaosSSE sends on conv over REST and follows the answer's SSE stream;
// after each break it resumes with GET …/events and its Last-Event-ID.
func chaosSSE(ctx context.Context, base, conv string, s *chaosSeen) {
	last := ""
	for attempt := 0; ctx.Err() == nil; attempt++ {
		var req *http.Request
		if attempt == 0 {
			req, _ = http.NewRequestWithContext(ctx, "POST", base+"/agentik/conversations/"+conv+"/send", strings.NewReader(`{"content":[{"type":"text","body":"talk"}]}`))
			req.Header.Set("Content-Type", "application/json")
		} else {
			chaosUp(ctx, base)
			req, _ = http.NewRequestWithContext(ctx, "GET", base+"/agentik/conversations/"+conv+"/events", nil)
			req.Header.Set("Last-Event-ID", last)
			s.mu.Lock()
			s.resumes++
			s.mu.Unlock()
		}
		req.Header.Set("Authorization", "Bearer "+chaosKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.fail(err)
			continue
		}
		if resp.StatusCode != 200 {
			s.fail(fmt.Errorf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode))
			resp.Body.Close()
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		id := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ev agent.Event
				if json.Unmarshal([]byte(data), &ev) != nil {
					continue
				}
				last = id
				if s.event(id, ev) {
					resp.Body.Close()
					return
				}
			}
		}
		resp.Body.Close()
	}
}

// chaosWS follows conv on agentik's WebSocket and sends on it; after each
// break it dials again and subscribes after the last seq it received, with
// the epoch of its first subscription.
func chaosWS(ctx context.Context, base, conv string, s *chaosSeen) {
	var after int64
	epoch := ""
	hdr := http.Header{"Authorization": {"Bearer " + chaosKey}}
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			chaosUp(ctx, base)
			s.mu.Lock()
			s.resumes++
			s.mu.Unlock()
		}
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/agentik/ws", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			s.fail(err)
			continue
		}
		ws.SetReadLimit(1 << 20)
		sub := fmt.Sprintf(`{"op":"subscribe","id":"sub","stream":"conversation","conversation_id":%q,"after":%d,"epoch":%q}`, conv, after, epoch)
		if err := ws.Write(ctx, websocket.MessageText, []byte(sub)); err != nil {
			s.fail(err)
			ws.CloseNow()
			continue
		}
		if attempt == 0 {
			send := fmt.Sprintf(`{"op":"send","id":"send","conversation_id":%q,"content":[{"type":"text","body":"talk"}],"client_id":"chaos-ws"}`, conv)
			if err := ws.Write(ctx, websocket.MessageText, []byte(send)); err != nil {
				s.fail(err)
				ws.CloseNow()
				continue
			}
		}
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				s.fail(err)
				break
			}
			var f protocol.Frame
			if json.Unmarshal(b, &f) != nil {
				continue
			}
			switch f.Type {
			case protocol.FrameReply:
				var r protocol.SubscribeResult
				if !f.OK {
					s.fail(fmt.Errorf("reply %s: %+v", *f.ID, f.Error))
				} else if epoch == "" && json.Unmarshal(f.Result, &r) == nil && r.Epoch != "" {
					epoch = r.Epoch
				}
			case protocol.FrameResync:
				s.fail(fmt.Errorf("resync %s after %d", f.Reason, f.After))
			case protocol.FrameEvent:
				var ae struct {
					Seq   int64
					Event agent.Event
				}
				if json.Unmarshal(f.Event, &ae) != nil {
					continue
				}
				after = ae.Seq
				if s.event(fmt.Sprint(ae.Seq), ae.Event) {
					ws.Close(websocket.StatusNormalClosure, "")
					return
				}
			}
		}
		ws.CloseNow()
	}
}

// chaosNode is what testdata/chaos.mjs reported of one client.
type chaosNode struct {
	Text      string
	Done      bool
	Attempts  int
	Errors    []string
	Anomalies []string
	// Responses
	ID, Status, Final string
	Seqs              []int
	// chat completions
	Conversation, Finish string
	// A2A
	Task   string
	States []string
	// MCP
	Result, Thrown string
	IsError        bool
	// AI SDK
	MessageIDs []string
	// AG-UI
	Outcome  string
	Messages []struct{ Role, Content string }
}

// chaosEnv is where the turns run: first is the instance they start on;
// kill kills the instance running them and returns the one that continues
// them (started again on SQLite, another one on PostgreSQL), having
// pointed the clients' proxy at it with point.
type chaosEnv struct {
	first *proc
	kill  func(cur *proc, point func(addr string)) *proc
}

// runChaos runs the scenario: eight clients, len(pieces)-1 kills.
func runChaos(t *testing.T, fake *llmtest.Server, pieces []string, env chaosEnv) {
	const turns = 8
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	for range turns {
		fake.Enqueue(chaosReply(pieces, 0, hold))
	}
	cur := env.first
	proxy := newChaosProxy(t, cur.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The Go clients: SSE and WebSocket, each on a conversation of its own.
	sse, ws := &chaosSeen{}, &chaosSeen{}
	var sseConv, wsConv agent.Conversation
	must(t, chaosKey, "POST", proxy.url+"/agentik/conversations", `{}`, &sseConv)
	must(t, chaosKey, "POST", proxy.url+"/agentik/conversations", `{}`, &wsConv)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); chaosSSE(ctx, proxy.url, sseConv.ID, sse) }()
	go func() { defer wg.Done(); chaosWS(ctx, proxy.url, wsConv.ID, ws) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	// The six clients of testdata/chaos.mjs.
	targets := make([]string, len(pieces))
	for i := range pieces {
		targets[i] = strings.Join(pieces[:i+1], "")
	}
	whole := targets[len(targets)-1]
	tj, _ := json.Marshal(targets)
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "chaos.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL="+proxy.url, "AGENTIK_KEY="+chaosKey, "TARGETS="+string(tj))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 4<<20)
	logs := func() string {
		return fmt.Sprintf("node's last lines:\n%s\nagentik's logs:\n%s", tail(stderr.String(), 3000), tail(cur.logs.String(), 3000))
	}
	// want waits until every client saw targets[n] (for the last: ended).
	want := func(n int) {
		t.Helper()
		fmt.Fprintf(stdin, "want %d\n", n)
		if !lines.Scan() {
			t.Fatalf("node gave no answer to want %d: %v\n%s", n, lines.Err(), logs())
		}
		for name, s := range map[string]*chaosSeen{"sse": sse, "websocket": ws} {
			testwait.For(t, fmt.Sprintf("the %s client to see piece %d", name, n), func() bool {
				text, done := s.snapshot()
				if n == len(targets)-1 {
					return done
				}
				// Not a prefix: a piece came twice or went missing.
				return done || !strings.HasPrefix(targets[n], text) || text == targets[n]
			})
			if text, done := s.snapshot(); n < len(targets)-1 && text != targets[n] {
				t.Fatalf("at kill %d the %s client (ended %v) saw %q; want %q", n+1, name, done, tail(text, 200), tail(targets[n], 200))
			}
		}
		var saw struct{ Texts map[string]int }
		if err := json.Unmarshal(lines.Bytes(), &saw); err == nil && n < len(targets)-1 {
			for name, l := range saw.Texts {
				if l != len(targets[n]) {
					t.Fatalf("at kill %d node's %s client saw %d bytes; want %d\n%s", n+1, name, l, len(targets[n]), logs())
				}
			}
		}
	}

	for k := 1; k < len(pieces); k++ {
		want(k - 1)
		for range turns {
			fake.Enqueue(chaosReply(pieces, k, hold))
		}
		cur = env.kill(cur, proxy.point)
	}
	want(len(pieces) - 1)
	if !lines.Scan() {
		t.Fatalf("node: %v\n%s", lines.Err(), logs())
	}
	var report struct {
		Clients   map[string]chaosNode
		Unhandled []string // rejections inside a client library as a stream broke
	}
	if err := json.Unmarshal(lines.Bytes(), &report); err != nil {
		t.Fatalf("%v: %s", err, lines.Bytes())
	}
	_ = cmd.Wait()
	got := report.Clients
	if len(report.Unhandled) > 0 {
		t.Logf("rejections no client code could catch: %v", report.Unhandled)
	}

	// Every client shows the whole answer, once.
	for name, s := range map[string]*chaosSeen{"sse": sse, "websocket": ws} {
		s.mu.Lock()
		if s.text != whole {
			t.Errorf("the %s client saw %q", name, s.text)
		}
		seen := map[string]bool{}
		for _, id := range s.ids {
			if seen[id] {
				t.Errorf("event %s reached the %s client twice", id, name)
			}
			seen[id] = true
		}
		if s.resumes < len(pieces)-1 {
			t.Errorf("the %s client resumed %d times; want at least one per kill", name, s.resumes)
		}
		s.mu.Unlock()
	}
	for _, name := range []string{"responses", "chat", "a2a", "mcp", "aisdk", "agui"} {
		c, ok := got[name]
		if !ok || !c.Done || c.Text != whole || len(c.Anomalies) > 0 {
			t.Errorf("the %s client: done %v, anomalies %v, text %q; errors %v", name, c.Done, c.Anomalies, c.Text, c.Errors)
		}
	}
	if r := got["responses"]; r.Status != "completed" || r.Final != whole || !slices.IsSorted(r.Seqs) || len(slices.Compact(slices.Clone(r.Seqs))) != len(r.Seqs) {
		t.Errorf("the Responses stream: status %s, final %q, sequence numbers %v", r.Status, r.Final, r.Seqs)
	}
	if c := got["chat"]; c.Finish != "stop" {
		t.Errorf("the chat completion ended %q", c.Finish)
	}
	if a := got["a2a"]; a.States[len(a.States)-1] != "COMPLETED" || slices.Contains(a.States, "FAILED") {
		t.Errorf("the A2A task's states: %v", a.States)
	}
	if m := got["mcp"]; m.Result != whole || m.IsError || m.Thrown != "" {
		t.Errorf("the MCP call: result %q, error %v %s", m.Result, m.IsError, m.Thrown)
	}
	if a := got["aisdk"]; len(a.MessageIDs) != 1 {
		t.Errorf("the AI SDK's streams were of messages %v; want one", a.MessageIDs)
	}
	if a := got["agui"]; a.Outcome != "success" || len(a.Messages) != 2 || a.Messages[1].Content != whole {
		t.Errorf("the AG-UI agent: outcome %q, messages %+v", a.Outcome, a.Messages)
	}

	// Every turn is stored completed: its last message the whole answer,
	// not interrupted, no error, the conversation idle.
	var list struct{ Conversations []agent.Conversation }
	must(t, chaosKey, "GET", proxy.url+"/agentik/conversations?limit=1000", "", &list)
	answered := 0
	for _, c := range list.Conversations {
		var hist struct{ Messages []agent.Message }
		testwait.For(t, "conversation "+c.ID+" to be idle", func() bool {
			var now agent.Conversation
			must(t, chaosKey, "GET", proxy.url+"/agentik/conversations/"+c.ID, "", &now)
			return !now.Running
		})
		must(t, chaosKey, "GET", proxy.url+"/agentik/conversations/"+c.ID+"/messages", "", &hist)
		for _, m := range hist.Messages {
			if m.Type == agent.MessageError {
				t.Errorf("conversation %s (%s) holds an error: %+v", c.ID, c.Title, m.Error)
			}
		}
		if n := len(hist.Messages); n > 0 {
			if last := hist.Messages[n-1]; last.Type == agent.MessageAssistant && !last.Interrupted && len(last.Content) == 1 && last.Content[0].Body == whole {
				answered++
				continue
			}
			t.Errorf("conversation %s (%s) ends with %+v", c.ID, c.Title, hist.Messages[n-1])
		}
	}
	if answered != turns {
		t.Errorf("%d of %d conversations end with the whole answer", answered, len(list.Conversations))
	}
}

// TestChaosKill9EveryProtocol kills the real binary (SQLite) twice while
// clients of all eight protocols stream long answers: once mid-answer,
// once mid-continuation. Every turn ends completed with the whole answer,
// and every client, resuming by its own protocol's means, shows it once.
func TestChaosKill9EveryProtocol(t *testing.T) {
	t.Parallel()
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr, db := freeAddr(t), filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + chaosKey}
	runChaos(t, fake, chaosPieces(2), chaosEnv{
		first: start(t, addr, db, env...),
		kill: func(cur *proc, _ func(string)) *proc {
			_ = cur.cmd.Process.Signal(syscall.SIGKILL)
			_ = cur.cmd.Wait()
			return start(t, addr, db, env...) // the same address: the proxy's target
		},
	})
}

// TestChaosKill9OtherInstanceContinues is the chaos test on PostgreSQL:
// the instance running the turns is killed, another continues them at
// its recovery tick (AGENTIK_RECOVER_INTERVAL), and the clients, behind a
// proxy as behind a load balancer, resume there; twice, a third instance
// taking over from the second.
func TestChaosKill9OtherInstanceContinues(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + chaosKey, "AGENTIK_RECOVER_INTERVAL=300ms"}
	next := startDSN(t, dsn, env...)
	runChaos(t, fake, chaosPieces(2), chaosEnv{
		first: startDSN(t, dsn, env...),
		kill: func(cur *proc, point func(string)) *proc {
			_ = cur.cmd.Process.Signal(syscall.SIGKILL)
			_ = cur.cmd.Wait()
			took := next
			point(took.addr) // the clients resume there at once, maybe before its recovery tick
			// The instance that takes over at the next kill starts once
			// this one holds every turn (else it could take some).
			testwait.For(t, "the other instance to continue the turns", func() bool {
				return strings.Count(took.logs.String(), "msg=turn_continued") >= 8
			})
			next = startDSN(t, dsn, env...)
			return took
		},
	})
}
