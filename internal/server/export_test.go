package server_test

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

func (ts *testServer) history(t *testing.T, id string) []agent.Message {
	t.Helper()
	var res protocol.MessagesResult
	ts.call(t, "GET", "/agentik/conversations/"+id+"/messages?limit=1000", "", 200, &res)
	return res.Messages
}

func (ts *testServer) total(t *testing.T) int {
	t.Helper()
	var l protocol.ListResult
	ts.call(t, "GET", "/agentik/conversations", "", 200, &l)
	return l.Total
}

// comparable strips what an import gives anew.
func comparable(ms []agent.Message) []agent.Message {
	out := make([]agent.Message, len(ms))
	for i, m := range ms {
		m.ID, m.ConversationID, m.Seq = "", "", 0
		out[i] = m
	}
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "Paris is the capital of France.", Usage: &agent.Usage{PromptTokens: 3, CompletionTokens: 7, TotalTokens: 10}})
	ts.send(t, c.ID, "capital of France?")
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/rename", `{"title":"Geography `+"`quiz`"+`"}`, 200, nil)
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &c)
	orig := ts.history(t, c.ID)

	resp := ts.do(t, "GET", "/agentik/conversations/"+c.ID+"/export?format=json", "")
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export: %d %s", resp.StatusCode, doc)
	}
	var a agent.Archive
	if err := json.Unmarshal(doc, &a); err != nil || a.Format != "agentik" || a.Version != 1 || len(a.Conversations) != 1 {
		t.Fatalf("export = %v %s", err, doc)
	}

	var res agent.ImportResult
	ts.call(t, "POST", "/agentik/import", string(doc), 201, &res)
	if len(res.Conversations) != 1 || res.Conversations[0].ID == c.ID {
		t.Fatalf("import = %+v", res)
	}
	got := res.Conversations[0]
	if got.Title != c.Title || !got.CreatedAt.Equal(c.CreatedAt) || got.MessageCount != c.MessageCount {
		t.Errorf("imported %+v, original %+v", got, c)
	}
	if diff := cmp.Diff(comparable(orig), comparable(ts.history(t, got.ID))); diff != "" {
		t.Errorf("imported history (-original +imported):\n%s", diff)
	}
	// Again: nothing new.
	ts.call(t, "POST", "/agentik/import", string(doc), 200, &res)
	if len(res.Conversations) != 0 || len(res.Existing) != 1 || res.Existing[0] != got.ID {
		t.Fatalf("second import = %+v", res)
	}
	if n := ts.total(t); n != 2 {
		t.Fatalf("%d conversations, want 2", n)
	}

	// The whole database, into a fresh server: the same histories.
	resp = ts.do(t, "GET", "/agentik/export", "")
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(all, &a); err != nil || len(a.Conversations) != 2 {
		t.Fatalf("export all = %v %.300s", err, all)
	}
	fresh := newTestServer(t)
	fresh.call(t, "POST", "/agentik/import", string(all), 201, &res)
	if len(res.Conversations) != 2 {
		t.Fatalf("import all = %+v", res)
	}
	for _, ic := range res.Conversations {
		if diff := cmp.Diff(comparable(orig), comparable(fresh.history(t, ic.ID))); diff != "" {
			t.Errorf("history of %s (-original +imported):\n%s", ic.Title, diff)
		}
	}
	// The imported text is searchable.
	var sr protocol.SearchResults
	fresh.call(t, "GET", "/agentik/search?q=paris", "", 200, &sr)
	if len(sr.Results) != 2 {
		t.Errorf("search after import = %+v", sr)
	}

	// Markdown for people.
	resp = ts.do(t, "GET", "/agentik/conversations/"+c.ID+"/export?format=markdown", "")
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"# Geography `quiz`", "## User · ", "capital of France?", "## Assistant · ", "Paris is the capital of France."} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, path := range []string{"/agentik/conversations/" + c.ID + "/export?format=pdf", "/agentik/conversations/nope/export"} {
		resp := ts.do(t, "GET", path, "")
		resp.Body.Close()
		if resp.StatusCode != 400 && resp.StatusCode != 404 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

func TestImportChatGPT(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t)
	sample, err := os.ReadFile("testdata/chatgpt-conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var res agent.ImportResult
	ts.call(t, "POST", "/agentik/import", string(sample), 201, &res)
	if len(res.Conversations) != 2 {
		t.Fatalf("import = %+v", res)
	}
	sour := res.Conversations[0]
	if sour.Title != "Sourdough starter help" || !sour.CreatedAt.Equal(time.Date(2024, 5, 1, 12, 51, 30, 123000000, time.UTC)) {
		t.Errorf("conversation = %+v", sour)
	}
	var got []string
	for _, m := range ts.history(t, sour.ID) {
		got = append(got, m.Type+": "+agent.MessageText(m))
		if m.Seq == 0 || m.Date.Year() != 2024 {
			t.Errorf("message %+v: no seq or date lost", m)
		}
	}
	want := []string{
		"user_message: My sourdough starter smells like nail polish. Is it dead?",
		"assistant_message: Not dead, just hungry: the acetone smell means it needs feeding more often.",
		"user_message: How often should I feed it at 18 °C?",
		"assistant_message: At 18 °C, feed it every 12 hours with equal weights of flour and water.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the path to current_node (-want +got):\n%s", diff)
	}
	// Idempotent per source; a deleted one comes back.
	ts.call(t, "POST", "/agentik/import", string(sample), 200, &res)
	if len(res.Conversations) != 0 || len(res.Existing) != 2 {
		t.Fatalf("re-import = %+v", res)
	}
	ts.call(t, "DELETE", "/agentik/conversations/"+sour.ID, "", 204, nil)
	ts.call(t, "POST", "/agentik/import", string(sample), 201, &res)
	if len(res.Conversations) != 1 || res.Conversations[0].Title != "Sourdough starter help" || len(res.Existing) != 1 {
		t.Fatalf("import after delete = %+v", res)
	}
	var sr protocol.SearchResults
	ts.call(t, "GET", "/agentik/search?q=acetone", "", 200, &sr)
	if len(sr.Results) != 1 || sr.Results[0].ConversationID != res.Conversations[0].ID {
		t.Errorf("search acetone = %+v", sr)
	}
}

func TestImportHostile(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t)
	msg := `{"type":"user_message","content":[{"type":"text","body":"hi"}]}`
	archive := func(convs ...string) string {
		return `{"format":"agentik","version":1,"conversations":[` + strings.Join(convs, ",") + `]}`
	}
	conv := func(id string, msgs ...string) string {
		return `{"conversation":{"id":"` + id + `","title":"t"},"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	many := strings.TrimSuffix(strings.Repeat(msg+",", agent.MaxImportMessages+1), ",")
	for name, c := range map[string]struct {
		body   string
		status int
	}{
		"empty":             {"", 400},
		"malformed":         {`{"format":"agentik",`, 400},
		"not an object":     {`42`, 400},
		"wrong format":      {`{"format":"other","version":1}`, 400},
		"future version":    {`{"format":"agentik","version":99}`, 400},
		"deep nesting":      {strings.Repeat("[", 100000) + strings.Repeat("]", 100000), 400},
		"deep object":       {strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000), 400},
		"too many messages": {archive(conv("x", many)), 413},
		"bad second conv":   {archive(conv("a", msg), conv("b", `{"type":"user_message","content":[{"type":"video"}]}`)), 400},
		"huge text":         {archive(conv("a", `{"type":"user_message","content":[{"type":"text","body":"`+strings.Repeat("x", agent.MaxTextBytes+1)+`"}]}`)), 400},
		"over the body cap": {archive(conv("a", `{"type":"user_message","content":[{"type":"text","body":"`+strings.Repeat("x", protocol.MaxBodyBytes)+`"}]}`)), 413},
		"unknown type":      {archive(conv("a", `{"type":"branch"}`)), 400},
		"chatgpt loop":      {`[{"id":"l","title":"t","current_node":"a","mapping":{"a":{"parent":"b"},"b":{"parent":"a"}}}]`, 400},
		"chatgpt missing":   {`[{"id":"l","title":"t","current_node":"zz","mapping":{}}]`, 400},
		"chatgpt no id":     {`[{"title":"t","mapping":{}}]`, 400},
		"chatgpt wrong":     {`[{"id":5}]`, 400},
	} {
		resp := ts.do(t, "POST", "/agentik/import", c.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %.200s", name, resp.StatusCode, c.status, b)
		}
	}
	if n := ts.total(t); n != 0 {
		t.Fatalf("hostile imports wrote %d conversations", n)
	}
	// A Store failure midway (the same source twice, raced past the
	// lookup, is caught by the unique index) also leaves nothing: here two
	// conversations, the second with a client_id used twice.
	dup := `{"type":"user_message","client_id":"k","content":[{"type":"text","body":"hi"}]}`
	resp := ts.do(t, "POST", "/agentik/import", archive(conv("ok", msg), conv("dup", dup, dup)))
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("duplicate client_id: status %d", resp.StatusCode)
	}
	if n := ts.total(t); n != 0 {
		t.Fatalf("a failed import left %d conversations", n)
	}
}
