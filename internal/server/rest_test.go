package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

type frame struct {
	ID    string
	Event string
	Data  string
}

// readSSE reads frames until the stream ends or stop says so.
func readSSE(t testing.TB, body io.Reader, stop func(frame) bool) []frame {
	t.Helper()
	var out []frame
	var f frame
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f.Event != "" || f.Data != "" {
				out = append(out, f)
				if stop != nil && stop(f) {
					return out
				}
			}
			f = frame{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			f.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			f.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			f.Data = line[6:]
		}
	}
	return out
}

func atEnd(f frame) bool { return f.Event == "end" }

func (ts *testServer) do(t testing.TB, method, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// call does a request, checks the status and decodes the JSON answer.
func (ts *testServer) call(t testing.TB, method, path, body string, status int, out any) {
	t.Helper()
	resp := ts.do(t, method, path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

func (ts *testServer) create(t testing.TB) agent.Conversation {
	t.Helper()
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"test"}`, 201, &c)
	return c
}

func (ts *testServer) send(t testing.TB, id, text string) []frame {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": []agent.Content{agent.Text(text)}})
	resp := ts.do(t, "POST", "/agentik/conversations/"+id+"/send", string(body))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("send: %d %s", resp.StatusCode, b)
	}
	return readSSE(t, resp.Body, atEnd)
}

func names(fs []frame) string {
	var out []string
	for _, f := range fs {
		if f.Event == "append_text" && len(out) > 0 && out[len(out)-1] == "append_text" {
			continue
		}
		out = append(out, f.Event)
	}
	return strings.Join(out, " ")
}

func TestRESTLifecycle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	if c.ID == "" || c.Title != "test" || c.Temp {
		t.Fatalf("created %+v", c)
	}
	ts.Fake.Enqueue(llmtest.Reply{Text: "Hello from the model", Usage: &agent.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}})
	fs := ts.send(t, c.ID, "hi")
	if got, want := names(fs), "message start_response append_text message end"; got != want {
		t.Fatalf("send frames\n got %s\nwant %s", got, want)
	}
	var text strings.Builder
	prev := int64(0)
	for _, f := range fs {
		seq, err := strconv.ParseInt(f.ID, 10, 64)
		if err != nil || seq <= prev {
			t.Fatalf("frame id %q after %d: ids must be increasing seqs", f.ID, prev)
		}
		prev = seq
		var ev agent.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil || ev.Type != f.Event {
			t.Fatalf("frame %+v: data is not the inner event (%v)", f, err)
		}
		if ev.Type == agent.EventAppendText {
			text.WriteString(ev.Text)
		}
	}
	if text.String() != "Hello from the model" {
		t.Errorf("streamed %q", text.String())
	}

	var list struct {
		Conversations []agent.Conversation `json:"conversations"`
		Total         int                  `json:"total"`
	}
	ts.call(t, "GET", "/agentik/conversations", "", 200, &list)
	if list.Total != 1 || list.Conversations[0].MessageCount != 2 {
		t.Fatalf("list %+v", list)
	}
	var got agent.Conversation
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &got)
	if got.MessageCount != 2 || got.Running {
		t.Fatalf("get %+v", got)
	}
	var hist struct{ Messages []agent.Message }
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200, &hist)
	if len(hist.Messages) != 2 || hist.Messages[1].Content[0].Body != "Hello from the model" || hist.Messages[1].Usage.TotalTokens != 3 {
		t.Fatalf("history %+v", hist)
	}
	ts.call(t, "GET", fmt.Sprintf("/agentik/conversations/%s/messages?after=%d", c.ID, hist.Messages[0].Seq), "", 200, &hist)
	if len(hist.Messages) != 1 {
		t.Fatalf("after filter: %+v", hist)
	}
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/rename", `{"title":"Renamed"}`, 200, &got)
	if got.Title != "Renamed" {
		t.Fatalf("rename %+v", got)
	}
	resp := ts.do(t, "DELETE", "/agentik/conversations/"+c.ID, "")
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 404, nil)
	var health map[string]any
	ts.call(t, "GET", "/health", "", 200, &health)
	if health["database"] != "ok" {
		t.Errorf("health %v", health)
	}
}

func TestRESTInterruptWhileStreaming(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: strings.Repeat("tok ", 500), Delay: 5 * time.Millisecond})
	body := `{"content":[{"type":"text","body":"go"}]}`
	resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", body)
	defer resp.Body.Close()
	var fs []frame
	interrupted := false
	fs = readSSE(t, resp.Body, func(f frame) bool {
		if f.Event == "append_text" && !interrupted {
			interrupted = true
			var res map[string]bool
			ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/interrupt", "", 200, &res)
			if !res["interrupted"] {
				t.Errorf("interrupt answered %v", res)
			}
		}
		return atEnd(f)
	})
	if got := names(fs); !strings.HasSuffix(got, "message interrupted end") {
		t.Fatalf("frames %s", got)
	}
	var hist struct{ Messages []agent.Message }
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200, &hist)
	if last := hist.Messages[len(hist.Messages)-1]; !last.Interrupted {
		t.Fatalf("last message %+v", last)
	}
}

func TestRESTModelFailureThenRecovery(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	for range 3 {
		ts.Fake.Enqueue(llmtest.Reply{Status: 503})
	}
	fs := ts.send(t, c.ID, "hi")
	if got, want := names(fs), "message message error end"; got != want {
		t.Fatalf("failed turn\n got %s\nwant %s", got, want)
	}
	ts.Fake.Enqueue(llmtest.Reply{Text: "ok now"})
	if got := names(ts.send(t, c.ID, "again")); got != "message start_response append_text message end" {
		t.Fatalf("next turn %s", got)
	}
}

func TestRESTTurnSurvivesClientDisconnect(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: strings.Repeat("w ", 100), Delay: 2 * time.Millisecond})
	resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", `{"content":[{"type":"text","body":"go"}]}`)
	readSSE(t, resp.Body, func(f frame) bool { return f.Event == "append_text" })
	resp.Body.Close() // the client goes away mid-turn
	var hist struct{ Messages []agent.Message }
	waitFor(t, "the turn to finish after its client left", func() bool {
		ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200, &hist)
		return len(hist.Messages) == 2
	})
	if m := hist.Messages[1]; m.Interrupted || m.Content[0].Body != strings.Repeat("w ", 100) {
		t.Fatalf("answer %+v", m)
	}
}

func TestRESTReplayPaging(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "a b c d e f"})
	ts.send(t, c.ID, "hi")
	var all []agent.AllEvent
	after := ""
	for range 100 {
		var page struct {
			Events      []agent.AllEvent `json:"events"`
			NextAfterID string           `json:"next_after_id"`
		}
		ts.call(t, "GET", "/agentik/events/replay?limit=3&after_id="+after, "", 200, &page)
		if len(page.Events) == 0 {
			if page.NextAfterID != after {
				t.Fatalf("empty page moved the cursor to %q", page.NextAfterID)
			}
			break
		}
		if len(page.Events) > 3 {
			t.Fatalf("page of %d", len(page.Events))
		}
		all = append(all, page.Events...)
		after = page.NextAfterID
	}
	stored, err := ts.Store.Events(context.Background(), agent.EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(stored) || len(all) < 6 {
		t.Fatalf("paged %d events, stored %d", len(all), len(stored))
	}
	for i := range all {
		if all[i].Seq != stored[i].Seq || all[i].ID != stored[i].ID {
			t.Fatalf("event %d: %d/%s vs %d/%s", i, all[i].Seq, all[i].ID, stored[i].Seq, stored[i].ID)
		}
	}
	var conv struct{ Events []agent.AllEvent }
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/events/replay?limit=1000", "", 200, &conv)
	for _, e := range conv.Events {
		if e.Kind != agent.KindConversation || e.ConversationID != c.ID {
			t.Fatalf("conversation replay has %+v", e)
		}
	}
	ts.call(t, "GET", "/agentik/events/replay?after_id=unknown", "", 404, nil)
}

func TestSSELastEventIDResume(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "one two three"})
	full := ts.send(t, c.ID, "hi")
	// Resume the all-events stream from the middle of the turn.
	mid := full[len(full)/2].ID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/agentik/events/all", nil)
	req.Header.Set("Last-Event-ID", mid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := readSSE(t, resp.Body, atEnd)
	var want []string
	for _, f := range full {
		if n, _ := strconv.Atoi(f.ID); n > atoi(mid) {
			want = append(want, f.ID+" "+f.Event)
		}
	}
	var have []string
	for _, f := range got {
		var ae agent.AllEvent
		if err := json.Unmarshal([]byte(f.Data), &ae); err != nil || strconv.FormatInt(ae.Seq, 10) != f.ID {
			t.Fatalf("all-events frame %+v: %v", f, err)
		}
		if ae.Kind != agent.KindConversation {
			continue // turn_ended and other agent events
		}
		have = append(have, f.ID+" "+f.Event)
	}
	if strings.Join(have, ",") != strings.Join(want, ",") {
		t.Fatalf("resumed\n got %v\nwant %v", have, want)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func TestRESTBadInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	hold := make(chan struct{})
	defer close(hold)
	busy := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "x", Hold: hold})
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: busy.ID, Content: []agent.Content{agent.Text("hold")}}); err != nil {
		t.Fatal(err)
	}
	_, before, _ := ts.Store.Bounds(context.Background())
	conv := "/agentik/conversations/" + c.ID
	big := `{"content":[{"type":"text","body":"` + strings.Repeat("x", 17<<20) + `"}]}`
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		hdr                      []string
	}{
		{"malformed create", "POST", "/agentik/conversations", `{"title":`, 400, "bad_request", nil},
		{"wrong type", "POST", "/agentik/conversations", `{"title":5}`, 400, "bad_request", nil},
		{"long title", "POST", "/agentik/conversations", `{"title":"` + strings.Repeat("t", 300) + `"}`, 400, "bad_request", nil},
		{"malformed send", "POST", conv + "/send", `not json`, 400, "bad_request", nil},
		{"unknown content type", "POST", conv + "/send", `{"content":[{"type":"video"}]}`, 400, "bad_request", nil},
		{"empty content", "POST", conv + "/send", `{"content":[]}`, 400, "bad_request", nil},
		{"no content", "POST", conv + "/send", `{}`, 400, "bad_request", nil},
		{"oversized body", "POST", conv + "/send", big, 413, "too_large", nil},
		{"send unknown id", "POST", "/agentik/conversations/nope/send", `{"content":[{"type":"text","body":"x"}]}`, 404, "not_found", nil},
		{"send busy", "POST", "/agentik/conversations/" + busy.ID + "/send", `{"content":[{"type":"text","body":"x"}]}`, 409, "busy", nil},
		{"negative offset", "GET", "/agentik/conversations?offset=-1", "", 400, "bad_request", nil},
		{"huge limit", "GET", "/agentik/conversations?limit=100000", "", 400, "bad_request", nil},
		{"zero limit", "GET", "/agentik/conversations?limit=0", "", 400, "bad_request", nil},
		{"text limit", "GET", "/agentik/conversations?limit=ten", "", 400, "bad_request", nil},
		{"messages bad after", "GET", conv + "/messages?after=x", "", 400, "bad_request", nil},
		{"messages unknown", "GET", "/agentik/conversations/nope/messages", "", 404, "not_found", nil},
		{"get unknown", "GET", "/agentik/conversations/nope", "", 404, "not_found", nil},
		{"rename empty", "POST", conv + "/rename", `{"title":"   "}`, 400, "bad_request", nil},
		{"rename missing", "POST", conv + "/rename", `{}`, 400, "bad_request", nil},
		{"rename unknown", "POST", "/agentik/conversations/nope/rename", `{"title":"x"}`, 404, "not_found", nil},
		{"delete unknown", "DELETE", "/agentik/conversations/nope", "", 404, "not_found", nil},
		{"interrupt unknown", "POST", "/agentik/conversations/nope/interrupt", "", 404, "not_found", nil},
		{"events unknown", "GET", "/agentik/conversations/nope/events", "", 404, "not_found", nil},
		{"bad last-event-id", "GET", "/agentik/events/all", "", 400, "bad_request", []string{"Last-Event-ID", "abc"}},
		{"cursor ahead", "GET", "/agentik/events/all", "", 400, "bad_request", []string{"Last-Event-ID", "999999"}},
		{"replay bad limit", "GET", "/agentik/events/replay?limit=-5", "", 400, "bad_request", nil},
		{"no route", "GET", "/agentik/nothing", "", 404, "not_found", nil},
		{"foreign host", "GET", "/agentik/conversations", "", 403, "forbidden", []string{"Host", "evil.example"}},
		{"cross-site post", "POST", "/agentik/conversations", `{}`, 403, "forbidden", []string{"Origin", "https://evil.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, strings.NewReader(tt.body))
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				if tt.hdr[i] == "Host" {
					req.Host = tt.hdr[i+1]
				} else {
					req.Header.Set(tt.hdr[i], tt.hdr[i+1])
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e agent.Error
			b, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("body is not an Error: %s", b)
			}
			if resp.StatusCode != tt.status || e.Code != tt.code || e.Message == "" {
				t.Fatalf("got %d %+v, want %d %s", resp.StatusCode, e, tt.status, tt.code)
			}
			var keys map[string]any
			_ = json.Unmarshal(b, &keys)
			if len(keys) != 2 {
				t.Errorf("error body must be exactly {code,message}: %s", b)
			}
		})
	}
	if _, after, _ := ts.Store.Bounds(context.Background()); after != before {
		t.Errorf("bad input wrote %d events", after-before)
	}
}

func TestRESTNoModel(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withoutModel())
	c := ts.create(t)
	resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", `{"content":[{"type":"text","body":"hi"}]}`)
	defer resp.Body.Close()
	var e agent.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 503 || e.Code != "unavailable" || !strings.Contains(e.Message, "OPENAI_BASE_URL") {
		t.Fatalf("send without a model: %d %+v", resp.StatusCode, e)
	}
}

func TestRESTIdempotentSend(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "once"})
	body := `{"content":[{"type":"text","body":"hi"}],"client_id":"abc"}`
	resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", body)
	readSSE(t, resp.Body, atEnd)
	resp.Body.Close()
	var dup struct {
		MessageID string `json:"message_id"`
		Duplicate bool   `json:"duplicate"`
	}
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/send", body, 200, &dup)
	if !dup.Duplicate || dup.MessageID == "" {
		t.Fatalf("resend %+v", dup)
	}
	var hist struct{ Messages []agent.Message }
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200, &hist)
	if len(hist.Messages) != 2 || hist.Messages[0].ID != dup.MessageID {
		t.Fatalf("history %+v", hist.Messages)
	}
}

func TestSSEAgentEvents(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/agentik/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	c := ts.create(t)
	fs := readSSE(t, resp.Body, func(f frame) bool { return true })
	var ev agent.AgentEvent
	if err := json.Unmarshal([]byte(fs[0].Data), &ev); err != nil || fs[0].Event != "created" || ev.ConversationID != c.ID {
		t.Fatalf("frame %+v %v", fs[0], err)
	}
}

// TestRESTListFreshAfterEveryChange: the list is cached between changes
// (listcache.go), so the very next list after each kind of change must
// show it, on REST and on the WebSocket.
func TestRESTListFreshAfterEveryChange(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	type list struct {
		Conversations []agent.Conversation `json:"conversations"`
		Total         int                  `json:"total"`
	}
	get := func(path string) (list, string) {
		t.Helper()
		resp := ts.do(t, "GET", path, "")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var l list
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &l) != nil {
			t.Fatalf("GET %s: %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		return l, string(b)
	}
	titles := func(l list) string {
		var out []string
		for _, c := range l.Conversations {
			out = append(out, fmt.Sprintf("%s/%d", c.Title, c.MessageCount))
		}
		return fmt.Sprintf("%d: %s", l.Total, strings.Join(out, " "))
	}
	ws := dialWS(t, ts)
	defer ws.close()
	check := func(path, want string) {
		t.Helper()
		l, body := get(path)
		if got := titles(l); got != want {
			t.Fatalf("GET %s: %s, want %s", path, got, want)
		}
		if _, again := get(path); again != body {
			t.Fatalf("GET %s twice with no change between: the bodies differ:\n%s\n%s", path, body, again)
		}
		// The list_conversations op shares the cache.
		args := map[string]any{}
		if strings.HasSuffix(path, "limit=1") {
			args["limit"] = 1
		}
		var wl list
		ws.ok("list_conversations", args, &wl)
		if got := titles(wl); got != want {
			t.Fatalf("list_conversations %v: %s, want %s", args, got, want)
		}
	}
	const all, first = "/agentik/conversations", "/agentik/conversations?limit=1"
	check(all, "0: ")
	var a, b agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"a"}`, 201, &a)
	check(all, "1: a/0")
	ts.call(t, "POST", "/agentik/conversations", `{"title":"b"}`, 201, &b)
	check(all, "2: b/0 a/0")
	check(first, "2: b/0")
	ts.call(t, "POST", "/agentik/conversations/"+a.ID+"/rename", `{"title":"a2"}`, 200, nil)
	check(all, "2: a2/0 b/0")
	check(first, "2: a2/0")
	ts.Fake.Enqueue(llmtest.Reply{Text: "answer"})
	ts.send(t, b.ID, "hi")
	check(all, "2: b/2 a2/0")
	check(first, "2: b/2")
	resp := ts.do(t, "DELETE", "/agentik/conversations/"+b.ID, "")
	resp.Body.Close()
	check(all, "1: a2/0")
	ts.call(t, "POST", "/agentik/conversations", `{"title":"t","temp":true}`, 201, nil)
	check(all, "2: t/0 a2/0")
	check(first, "2: t/0")
}

// TestSSEHeartbeatWhileIdle: an idle SSE stream gets a heartbeat comment
// each interval it stays idle (the heartbeat's timer is not moved by
// every write, see serveSSE), before and after an event.
func TestSSEHeartbeatWhileIdle(t *testing.T) {
	t.Parallel()
	const every = 40 * time.Millisecond
	ts := newTestServer(t, func(_ *agent.Config, s *server.Config) { s.Heartbeat = every })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/agentik/events", nil)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), want) {
				return
			}
		}
		t.Fatalf("stream ended before %q: %v", want, lines.Err())
	}
	next(": heartbeat")
	next(": heartbeat")
	if waited := time.Since(start); waited < 2*every {
		t.Fatalf("two heartbeats within %s, want one per %s idle", waited, every)
	}
	ts.create(t)
	next("event: created")
	next(": heartbeat")
	next(": heartbeat")
}
