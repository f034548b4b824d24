package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

const testPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// freshSchema makes an empty schema on the test PostgreSQL and returns a
// DSN using it.
func freshSchema(t *testing.T) string {
	t.Helper()
	if os.Getenv("AGENTIK_TEST_NO_POSTGRES") != "" {
		t.Skip("AGENTIK_TEST_NO_POSTGRES is set")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testPostgres)
	if err != nil {
		t.Fatalf("PostgreSQL at %s unreachable (set AGENTIK_TEST_NO_POSTGRES=1 to skip): %v", testPostgres, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "inst_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(ctx)
	})
	return testPostgres + "&search_path=" + schema
}

// startDSN starts the binary on any database.
func startDSN(t *testing.T, dsn string, env ...string) *proc {
	t.Helper()
	return start(t, freeAddr(t), dsn, env...)
}

// twoOnPostgres starts two binaries on one fresh PostgreSQL schema with
// the fake model and env's other variables.
func twoOnPostgres(t *testing.T, env ...string) (a, b *proc, fake *llmtest.Server) {
	t.Helper()
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	env = append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake"}, env...)
	return startDSN(t, dsn, env...), startDSN(t, dsn, env...), fake
}

// TestInstancesShareTurns runs two binaries on one PostgreSQL: a turn that
// runs on A streams live to B's clients, a send through B is busy while it
// runs, and an interrupt sent to B stops it on A.
func TestInstancesShareTurns(t *testing.T) {
	t.Parallel()
	a, b, fake := twoOnPostgres(t)

	var c agent.Conversation
	postJSON(t, a.url("/agentik/conversations"), `{"title":"shared"}`, &c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url("/agentik/conversations/"+c.ID+"/events"), nil)
	watch, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()

	fake.Enqueue(llmtest.Reply{Text: strings.Repeat("word ", 3000), Delay: 2 * time.Millisecond})
	send, err := http.Post(a.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"talk"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer send.Body.Close()
	// B's subscriber sees A's turn live.
	events := bufio.NewScanner(watch.Body)
	for events.Scan() && events.Text() != "event: append_text" {
	}
	busy, err := http.Post(b.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"me too"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(busy.Body)
	busy.Body.Close()
	if busy.StatusCode != http.StatusConflict {
		t.Fatalf("send through B during A's turn: %d %s, want 409", busy.StatusCode, body)
	}
	var res map[string]bool
	postJSON(t, b.url("/agentik/conversations/"+c.ID+"/interrupt"), ``, &res)
	if !res["interrupted"] {
		t.Fatalf("interrupt through B: %v", res)
	}
	// A's send stream ends with interrupted + end, and the answer is kept.
	rest, _ := io.ReadAll(send.Body)
	if !strings.Contains(string(rest), "event: interrupted") || !strings.HasSuffix(strings.TrimSpace(string(rest)), `data: {"type":"end"}`) {
		t.Fatalf("A's stream after the interrupt ends with:\n%s", tail(string(rest), 400))
	}
	var hist struct{ Messages []agent.Message }
	getJSON(t, b.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	last := hist.Messages[len(hist.Messages)-1]
	if !last.Interrupted {
		t.Fatalf("last message %+v", last)
	}
	for events.Scan() && events.Text() != "event: interrupted" {
	}
	if events.Text() != "event: interrupted" {
		t.Fatal("B's subscriber did not see the interrupt")
	}
	var conv agent.Conversation
	getJSON(t, b.url("/agentik/conversations/"+c.ID), &conv)
	if conv.Running {
		t.Error("still running after the interrupt")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestInstancesStartOneTurn sends to one conversation through two binaries
// on one PostgreSQL at the same moment, for several conversations: each
// time exactly one send starts a turn and the other is busy, whichever
// instance read the conversation as idle first.
func TestInstancesStartOneTurn(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	defer close(hold)
	const convs = 12
	for range 2 * convs {
		fake.Enqueue(llmtest.Reply{Text: "held", Hold: hold})
	}
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake"}
	a := startDSN(t, dsn, env...)
	b := startDSN(t, dsn, env...)

	for i := range convs {
		var c agent.Conversation
		postJSON(t, a.url("/agentik/conversations"), `{}`, &c)
		fire := make(chan struct{})
		codes := make(chan int, 2)
		for _, p := range []*proc{a, b} {
			go func() {
				<-fire
				resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"at once"}]}`))
				if err != nil {
					codes <- 0
					return
				}
				codes <- resp.StatusCode
				resp.Body.Close() // a started turn goes on without its client
			}()
		}
		close(fire)
		got := []int{<-codes, <-codes}
		started := 0
		for _, code := range got {
			switch code {
			case http.StatusOK:
				started++
			case http.StatusConflict:
			default:
				t.Fatalf("conversation %d: send answered %d", i, code)
			}
		}
		if started != 1 {
			var hist struct{ Messages []agent.Message }
			getJSON(t, a.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
			t.Fatalf("conversation %d: two simultaneous sends through two instances answered %v: %d turns started (%d messages stored), want exactly 1", i, got, started, len(hist.Messages))
		}
	}
}

// TestNULBytesOnPostgres sends U+0000 in a system prompt, a message and
// the model's answer to the real binary on PostgreSQL: nothing is a 500,
// and every one is kept, as on SQLite.
func TestNULBytesOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	p := startDSN(t, dsn, "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake")
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{"system_prompt":"be\u0000terse"}`, &c)
	fake.Enqueue(llmtest.Reply{Text: "an\x00swer"})
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"que\u0000stion"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "event: end") || strings.Contains(string(body), "event: error") {
		t.Fatalf("send: %d\n%s", resp.StatusCode, body)
	}
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	if len(hist.Messages) != 2 || hist.Messages[0].Content[0].Body != "que\x00stion" || hist.Messages[1].Content[0].Body != "an\x00swer" {
		t.Fatalf("history %+v", hist.Messages)
	}
	var got agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+c.ID), &got)
	if got.SystemPrompt != "be\x00terse" {
		t.Fatalf("system prompt %q", got.SystemPrompt)
	}
}

// TestInstancesStartAtOnce: three instances started at once on an empty
// PostgreSQL schema, with agents defined in code, all start (each defines
// the code's agents after the other: none fails on a slug the other just
// took), and restarted at once with a changed definition they all start
// again, with one new version.
func TestInstancesStartAtOnce(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	_, fakeURL := llmtest.NewHTTPServer(t)
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.json")
	for round, prompt := range []string{"first", "second", "third", "fourth"} {
		if err := os.WriteFile(agents, []byte(`{"agents":[{"slug":"helper","name":"Helper","instructions":"`+prompt+`"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_AGENTS=" + agents}
		var procs []*proc
		exited := make(chan error, 3)
		for range 3 {
			addr := freeAddr(t)
			cmd := exec.Command(binary, "--addr", addr, "--db", dsn)
			cmd.Env = env
			logs := &syncBuffer{}
			cmd.Stderr = logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { exited <- cmd.Wait() }()
			procs = append(procs, &proc{cmd: cmd, addr: addr, logs: logs})
		}
		testwait.ForErr(t, "three instances listening", func() error {
			select {
			case err := <-exited:
				var all strings.Builder
				for _, p := range procs {
					all.WriteString(p.logs.String())
				}
				t.Fatalf("round %d: an instance started at once with others exited (%v):\n%s", round, err, all.String())
			default:
			}
			for _, p := range procs {
				if !strings.Contains(p.logs.String(), "msg=listening") {
					return fmt.Errorf("not listening yet:\n%s", p.logs.String())
				}
			}
			return nil
		})
		var a agent.AgentDef
		getJSON(t, procs[0].url("/agentik/agents/helper"), &a)
		if a.Instructions != prompt || a.Version != round+1 {
			t.Errorf("round %d: helper has instructions %q, version %d; want %q, %d", round, a.Instructions, a.Version, prompt, round+1)
		}
		for _, p := range procs {
			_ = p.cmd.Process.Signal(os.Interrupt)
		}
		for range procs {
			<-exited
		}
	}
}

// TestInstancesIngestAFileOnce: a file uploaded to A, still embedding
// when B starts and sweeps the files left processing, is ingested by A
// alone: B leaves it (another instance ingests it), calls no embedding,
// and the file ends processed with its chunks.
func TestInstancesIngestAFileOnce(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	target, _ := url.Parse(strings.TrimSuffix(fakeURL, "/v1"))
	proxy := httputil.NewSingleHostReverseProxy(target)
	var bEmbeds atomic.Int32
	bModel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			bEmbeds.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	defer bModel.Close()
	a := startDSN(t, dsn, "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_EMBEDDING_MODEL=fake-embed")
	held, release := fake.HoldEmbeddings()
	defer release()
	code, f := upload(t, a.url("/agentik/files"), "", "notes.md", "", []byte("# Notes\n\nThe office plant needs water on Mondays."), false)
	if code != 201 {
		t.Fatalf("upload: %d %v", code, f)
	}
	id := f["id"].(string)
	<-held // A is embedding it
	b := startDSN(t, dsn, "OPENAI_BASE_URL="+bModel.URL+"/v1", "OPENAI_MODEL=fake", "AGENTIK_EMBEDDING_MODEL=fake-embed")
	testwait.For(t, "B to find the file ingested elsewhere", func() bool {
		return strings.Contains(b.logs.String(), "msg=file_ingest_elsewhere file_id="+id)
	})
	release()
	var got agent.File
	testwait.For(t, "the file processed", func() bool {
		getJSON(t, b.url("/agentik/files/"+id), &got)
		return got.Status != agent.FileProcessing
	})
	if got.Status != agent.FileProcessed || got.Chunks == 0 || bEmbeds.Load() != 0 {
		t.Errorf("file %s: %s (%q), %d chunks; B asked for %d embeddings; want processed by A alone", id, got.Status, got.Error, got.Chunks, bEmbeds.Load())
	}
}

// TestInstancesCountTheirOwnTurns runs a turn on each of two binaries on
// one PostgreSQL and scrapes both /metrics as Prometheus would: each
// instance counts the turns it ended, so the sum across instances is the
// total. B's turn starts after A's ended, so B's log has A's turn below
// its own: once B counts its own turn it has passed A's, and an instance
// that counted every instance's turns would show A's there too.
func TestInstancesCountTheirOwnTurns(t *testing.T) {
	t.Parallel()
	a, b, fake := twoOnPostgres(t)

	turn := func(p *proc, reply llmtest.Reply) {
		t.Helper()
		var c agent.Conversation
		postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
		fake.Enqueue(reply)
		resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"count me"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body) // the turn's stream, to its end
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "event: end\n") {
			t.Fatalf("send through %s: %d\n%q", p.addr, resp.StatusCode, tail(string(body), 400))
		}
	}
	turn(a, llmtest.Reply{Text: "fine"})
	turn(b, llmtest.Reply{Status: http.StatusBadRequest, ErrorMessage: "no"})

	testwait.For(t, "each instance to count the turn it ended", func() bool {
		return turnsCounted(t, a, "ok") == 1 && turnsCounted(t, b, "error") == 1
	})
	for _, c := range []struct {
		p       *proc
		outcome string
		want    float64
	}{{a, "ok", 1}, {a, "error", 0}, {b, "ok", 0}, {b, "error", 1}} {
		if got := turnsCounted(t, c.p, c.outcome); got != c.want {
			t.Errorf("%s counts %v turns %s, want %v (each instance counts the turns it ended)", c.p.addr, got, c.outcome, c.want)
		}
	}
}

// turnsCounted scrapes p's /metrics for agentik_turns_total{outcome}.
func turnsCounted(t *testing.T, p *proc, outcome string) float64 {
	t.Helper()
	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	prefix := `agentik_turns_total{outcome="` + outcome + `"} `
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: %q", p.addr, line)
			}
			return f
		}
	}
	return 0
}
