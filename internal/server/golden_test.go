package server_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from this run")

// goldenRandom matches what differs between runs: ids and dates. Seqs, sub
// ids, call ids, text and frame boundaries stay, so a change in what the
// server writes shows.
var goldenRandom = regexp.MustCompile(`"(id|conversation_id|message_id|parent_id|head|date|created_at|updated_at|epoch|next_after_id)":"[^"]*"`)

func normalizeGolden(s string) string {
	s = goldenRandom.ReplaceAllString(s, `"$1":"…"`)
	// A heartbeat is a comment frame (": heartbeat" and its blank line)
	// that lands wherever the clock puts it: drop it whole.
	var out []string
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] == ": heartbeat" {
			if i+1 < len(lines) && lines[i+1] == "" {
				i++
			}
			continue
		}
		out = append(out, lines[i])
	}
	return strings.Join(out, "\n")
}

// checkGolden compares got (normalized) with testdata/golden/name, or
// rewrites it with -update-golden.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	got = normalizeGolden(got)
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-golden to record it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: the bytes differ from the recorded ones\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// rawSSE reads an SSE body as text until a frame of event type stop has
// been read n times.
func rawSSE(t *testing.T, body io.Reader, stop string, n int) string {
	t.Helper()
	var b strings.Builder
	r := bufio.NewReader(body)
	seen, last := 0, ""
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("sse: %v after\n%s", err, b.String())
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			last = line[7:]
		case line == "" && last != "":
			if last == stop {
				if seen++; seen == n {
					return b.String()
				}
			}
			last = ""
		}
	}
}

// openSSE starts an SSE request; the caller reads and closes the body.
func openSSE(t *testing.T, ts *testServer, method, path, body string, hdr ...string) *http.Response {
	t.Helper()
	resp := ts.do(t, method, path, body, hdr...)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp
}

// rawWS reads raw WebSocket frames until one holds all of stops' markers
// in order (each marker ends one wait).
func rawWS(t *testing.T, c *websocket.Conn, stops ...string) string {
	t.Helper()
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(stops) > 0 {
		_, m, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("ws: %v after\n%s", err, b.String())
		}
		b.Write(m)
		b.WriteByte('\n')
		if strings.Contains(string(m), stops[0]) {
			stops = stops[1:]
		}
	}
	return b.String()
}

// TestGoldenEventBytes records what every kind of client receives for a
// turn with reasoning, text, a tool round, then a failing turn, a rename:
// live on the WebSocket and each SSE route, and replayed. The event path
// may change how it makes these bytes, never the bytes.
func TestGoldenEventBytes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	c := ts.create(t)
	cid := c.ID

	// Live clients, all subscribed before the turn.
	ws := dialWS(t, ts)
	defer ws.close()
	ws.subscribe(map[string]any{"stream": "all"})
	wsConv := dialWS(t, ts)
	defer wsConv.close()
	wsConv.subscribe(map[string]any{"stream": "conversation", "conversation_id": cid})
	all := openSSE(t, ts, "GET", "/agentik/events/all", "")
	defer all.Body.Close()
	agents := openSSE(t, ts, "GET", "/agentik/events", "")
	defer agents.Body.Close()
	conv := openSSE(t, ts, "GET", "/agentik/conversations/"+cid+"/events", "")
	defer conv.Body.Close()
	// The subscriptions are registered once their headers are read; make
	// sure the broker has them all before the turn starts.
	waitFor(t, "5 subscribers", func() bool { return ts.Broker.Subscribers() >= 5 })

	// Each text is one chunk, so the frames do not depend on timing.
	ts.Fake.Enqueue(llmtest.Reply{Reasoning: "Which city? Paris.", Text: "Let me look.", ChunkSize: 1000,
		ToolCalls: []agent.ToolCall{{ID: "call_w", Name: "weather__forecast", Arguments: `{"city":"Paris"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Sunny on Monday, showers on Tuesday.", ChunkSize: 1000})
	send := openSSE(t, ts, "POST", "/agentik/conversations/"+cid+"/send",
		`{"content":[{"type":"text","body":"Weather in Paris?"}],"client_id":"golden-1"}`)
	checkGolden(t, "send.sse", rawSSE(t, send.Body, "end", 1))
	send.Body.Close()

	ts.Fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "the model refuses"})
	send2 := openSSE(t, ts, "POST", "/agentik/conversations/"+cid+"/send",
		`{"content":[{"type":"text","body":"And in Rome?"}],"client_id":"golden-2"}`)
	checkGolden(t, "send_error.sse", rawSSE(t, send2.Body, "end", 1))
	send2.Body.Close()

	ts.call(t, "POST", "/agentik/conversations/"+cid+"/rename", `{"title":"Weather"}`, 200, nil)

	checkGolden(t, "conversation_events.sse", rawSSE(t, conv.Body, "end", 2))
	checkGolden(t, "events.sse", rawSSE(t, agents.Body, "renamed", 1))
	checkGolden(t, "events_all.sse", rawSSE(t, all.Body, "renamed", 1))
	checkGolden(t, "live_all.ws", rawWS(t, ws.c, `"type":"end"`, `"type":"end"`, `"type":"renamed"`))
	checkGolden(t, "live_conversation.ws", rawWS(t, wsConv.c, `"type":"end"`, `"type":"end"`))

	// Replays: from cursor 0 on a fresh connection, and over SSE.
	rws := dialWS(t, ts)
	defer rws.close()
	rws.write(`{"op":"subscribe","id":"r1","stream":"all","after":0}`)
	checkGolden(t, "replay_all.ws", rawWS(t, rws.c, `"type":"caught_up"`))
	rws.write(fmt.Sprintf(`{"op":"subscribe","id":"r2","stream":"conversation","conversation_id":%q,"after":0}`, cid))
	checkGolden(t, "replay_conversation.ws", rawWS(t, rws.c, `"type":"caught_up"`))
	for name, path := range map[string]string{
		"replay_all.sse":          "/agentik/events/all",
		"replay_events.sse":       "/agentik/events",
		"replay_conversation.sse": "/agentik/conversations/" + cid + "/events",
	} {
		resp := openSSE(t, ts, "GET", path, "", "Last-Event-ID", "0")
		stop, n := "renamed", 1
		if strings.Contains(path, "/conversations/") {
			stop, n = "end", 2
		}
		checkGolden(t, name, rawSSE(t, resp.Body, stop, n))
		resp.Body.Close()
	}
	for name, path := range map[string]string{
		"replay_page.json":              "/agentik/events/replay?limit=100",
		"replay_page_conversation.json": "/agentik/conversations/" + cid + "/events/replay?limit=10",
	} {
		resp := ts.do(t, "GET", path, "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkGolden(t, name, string(b))
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testwait.For(t, what, ok)
}

// TestNormalizeGoldenDropsHeartbeats: a heartbeat frame between two events
// leaves the golden text as it is without it.
func TestNormalizeGoldenDropsHeartbeats(t *testing.T) {
	t.Parallel()
	with := "event: a\ndata: 1\n\n: heartbeat\n\nevent: b\ndata: 2\n\n"
	without := "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"
	if got, want := normalizeGolden(with), normalizeGolden(without); got != want {
		t.Fatalf("with a heartbeat %q, without %q", got, want)
	}
}
