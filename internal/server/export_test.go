package server_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
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
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "Paris is the capital of France.", Usage: &agent.Usage{PromptTokens: 3, CompletionTokens: 7, TotalTokens: 10}})
	ts.send(t, c.ID, "capital of France?")
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/rename", `{"title":"Geography `+"`quiz`"+`"}`, 200, nil)
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"system_prompt":"Answer in one line.","params":{"temperature":0.2}}`, 200, nil)
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
	if got.SystemPrompt != "Answer in one line." || !cmp.Equal(got.Params, c.Params) || c.Params == nil {
		t.Errorf("imported settings %q %+v, original %q %+v", got.SystemPrompt, got.Params, c.SystemPrompt, c.Params)
	}
	// A model this server does not offer is dropped, not refused.
	other := strings.Replace(string(doc), `"title":`, `"model":"model-of-another-server","title":`, 1)
	other = strings.ReplaceAll(other, c.ID, "elsewhere1")
	var res2 agent.ImportResult
	ts.call(t, "POST", "/agentik/import", other, 201, &res2)
	if len(res2.Conversations) != 1 || res2.Conversations[0].Model != "" || res2.Conversations[0].SystemPrompt != "Answer in one line." {
		t.Fatalf("import with a foreign model = %+v", res2)
	}
	ts.call(t, "DELETE", "/agentik/conversations/"+res2.Conversations[0].ID, "", 204, nil)
	want, _ := shape(t, orig, "")
	if have, _ := shape(t, ts.history(t, got.ID), ""); !cmp.Equal(want, have) {
		t.Errorf("imported history (-original +imported):\n%s", cmp.Diff(want, have))
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
		if have, _ := shape(t, fresh.history(t, ic.ID), ""); !cmp.Equal(want, have) {
			t.Errorf("history of %s (-original +imported):\n%s", ic.Title, cmp.Diff(want, have))
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
	if !alone(t) {
		return
	}
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
	if !alone(t) {
		return
	}
	leakCheck(t)
	// The import's cap is set to every other request's, so "over the body
	// cap" needs no 64 MiB body.
	ts := newTestServer(t, func(_ *agent.Config, c *server.Config) { c.MaxImportBytes = protocol.MaxBodyBytes })
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
		"parent after":      {archive(conv("a", `{"id":"m1","parent_id":"m2","type":"user_message","content":[{"type":"text","body":"hi"}]}`, `{"id":"m2","type":"user_message","content":[{"type":"text","body":"hi"}]}`)), 400},
		"id twice":          {archive(conv("a", `{"id":"m1","type":"user_message","content":[{"type":"text","body":"hi"}]}`, `{"id":"m1","parent_id":"m1","type":"user_message","content":[{"type":"text","body":"hi"}]}`)), 400},
		"unknown head":      {archive(`{"conversation":{"id":"h","title":"t","head":"zz"},"messages":[` + msg + `]}`), 400},
		"chatgpt loop":      {`[{"id":"l","title":"t","current_node":"a","mapping":{"a":{"parent":"b"},"b":{"parent":"a"}}}]`, 400},
		"chatgpt side loop": {`[{"id":"l","title":"t","current_node":"r","mapping":{"r":{"parent":null},"a":{"parent":"b"},"b":{"parent":"a"}}}]`, 400},
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
		if name == "over the body cap" && !strings.Contains(string(b), "AGENTIK_MAX_IMPORT_BYTES") {
			t.Errorf("%s: %s does not name AGENTIK_MAX_IMPORT_BYTES", name, b)
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

// shape is a conversation's tree without the ids an import gives anew:
// each message as comparable, its parent_id replaced by the parent's
// index in ms ("" for a first message), and the head as an index.
func shape(t *testing.T, ms []agent.Message, head string) ([]agent.Message, string) {
	t.Helper()
	at := map[string]int{}
	for i, m := range ms {
		at[m.ID] = i
	}
	index := func(id string) string {
		if id == "" {
			return ""
		}
		i, ok := at[id]
		if !ok {
			t.Fatalf("%q is not a message of the conversation", id)
		}
		return fmt.Sprint(i)
	}
	out := comparable(ms)
	for i := range out {
		out[i].ParentID = index(ms[i].ParentID)
	}
	return out, index(head)
}

// An export carries every branch and the head; importing it gives the
// same tree, the same active path, and a next turn that sees that path.
func TestExportImportKeepsBranches(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	c := ts.create(t)
	base := "/agentik/conversations/" + c.ID
	ts.Fake.Enqueue(llmtest.Reply{Text: "a1"})
	ts.send(t, c.ID, "q1")
	ts.Fake.Enqueue(llmtest.Reply{Text: "a2"})
	ts.send(t, c.ID, "q2")
	var page protocol.MessagesResult
	ts.call(t, "GET", base+"/messages", "", 200, &page)
	q1 := page.Messages[0]
	ts.Fake.Enqueue(llmtest.Reply{Text: "a2b"})
	ts.postTurn(t, base+"/regenerate", map[string]any{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "b1"})
	ts.postTurn(t, base+"/edit", map[string]any{"message_id": q1.ID, "content": []agent.Content{agent.Text("p1")}})
	// The head back on the first answer: not the last message written.
	ts.call(t, "POST", base+"/switch_branch", `{"message_id":"`+page.Messages[3].ID+`"}`, 200, &c)
	var all protocol.MessagesResult
	ts.call(t, "GET", base+"/messages?branch=all", "", 200, &all)
	if len(all.Messages) != 7 || c.Head == all.Messages[6].ID {
		t.Fatalf("setup: %q, head %s", texts(all.Messages), c.Head)
	}
	wantTree, wantHead := shape(t, all.Messages, c.Head)
	resp := ts.do(t, "GET", base+"/export?format=markdown", "")
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(md), "a2\n") || strings.Contains(string(md), "a2b") || strings.Contains(string(md), "p1") {
		t.Errorf("the markdown is not the active path:\n%s", md)
	}

	for _, path := range []string{base + "/export", "/agentik/export"} {
		resp := ts.do(t, "GET", path, "")
		doc, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fresh := newTestServer(t)
		var res agent.ImportResult
		fresh.call(t, "POST", "/agentik/import", string(doc), 201, &res)
		if len(res.Conversations) != 1 {
			t.Fatalf("%s: import = %+v", path, res)
		}
		got := res.Conversations[0]
		fresh.call(t, "GET", "/agentik/conversations/"+got.ID+"/messages?branch=all", "", 200, &page)
		gotTree, gotHead := shape(t, page.Messages, got.Head)
		if diff := cmp.Diff(wantTree, gotTree); diff != "" {
			t.Errorf("%s: imported tree (-original +imported):\n%s", path, diff)
		}
		if gotHead != wantHead {
			t.Errorf("%s: imported head is message %s, want %s", path, gotHead, wantHead)
		}
		fresh.call(t, "GET", "/agentik/conversations/"+got.ID+"/messages", "", 200, &page)
		if got := strings.Join(texts(page.Messages), "|"); got != "q1|a1|q2|a2" {
			t.Errorf("%s: imported active path %s", path, got)
		}
		fresh.Fake.Enqueue(llmtest.Reply{Text: "a3"})
		fresh.send(t, got.ID, "q3")
		reqs := fresh.Fake.Requests()
		var prompt []string
		for _, m := range reqs[len(reqs)-1].Messages[1:] {
			prompt = append(prompt, m.Content)
		}
		if got := strings.Join(prompt, "|"); got != "q1|a1|q2|a2|q3" {
			t.Errorf("%s: the imported conversation's next request: %s", path, got)
		}
	}
}

// A ChatGPT conversation with a regenerated answer keeps both branches;
// current_node's is the active one.
func TestImportChatGPTBranches(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	sample, err := os.ReadFile("testdata/chatgpt-conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var res agent.ImportResult
	ts.call(t, "POST", "/agentik/import", string(sample), 201, &res)
	var page protocol.MessagesResult
	ts.call(t, "GET", "/agentik/conversations/"+res.Conversations[0].ID+"/messages?branch=all", "", 200, &page)
	var got []string
	for _, m := range page.Messages {
		s := agent.MessageText(m)
		if m.Siblings != nil {
			s = fmt.Sprintf("%d/%d %s", m.Siblings.Index, m.Siblings.Count, s)
		}
		got = append(got, s)
	}
	want := []string{
		"My sourdough starter smells like nail polish. Is it dead?",
		"Not dead, just hungry: the acetone smell means it needs feeding more often.",
		"1/2 How often, roughly?",
		"Twice a day.",
		"2/2 How often should I feed it at 18 °C?",
		"At 18 °C, feed it every 12 hours with equal weights of flour and water.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("branch=all (-want +got):\n%s", diff)
	}
	if page.Messages[2].ParentID != page.Messages[1].ID || page.Messages[4].ParentID != page.Messages[1].ID || res.Conversations[0].Head != page.Messages[5].ID {
		t.Errorf("tree: %+v, head %s", page.Messages, res.Conversations[0].Head)
	}
}

// zipOf is a ZIP archive of the files (name, content pairs), as a
// ChatGPT data export is one.
func zipOf(t testing.TB, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		f, err := zw.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportZIP: a ChatGPT data export ZIP imports as its
// conversations.json does; a ZIP without one, a damaged one and a zip
// bomb (declared or lying about its size) are refused with a typed error
// that says what to do, inflating at most the import's cap.
func TestImportZIP(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	// A cap of 1 MiB: the bombs below inflate past it at a sixteenth of
	// the bytes (and time, under -race) of the default's.
	const limit = 1 << 20
	ts := newTestServer(t, func(_ *agent.Config, c *server.Config) { c.MaxImportBytes = limit })
	sample, err := os.ReadFile("testdata/chatgpt-conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	export := zipOf(t, "__MACOSX/Export/._conversations.json", "junk", "Export/chat.html", "<html></html>",
		"Export/conversations.json", string(sample), "Export/user.json", `{"id":"user-1"}`)
	var res agent.ImportResult
	ts.call(t, "POST", "/agentik/import", string(export), 201, &res)
	if len(res.Conversations) != 2 || res.Conversations[0].Title != "Sourdough starter help" {
		t.Fatalf("ZIP import = %+v", res)
	}
	ts.call(t, "POST", "/agentik/import", string(export), 200, &res)
	if len(res.Conversations) != 0 || len(res.Existing) != 2 {
		t.Fatalf("ZIP re-import = %+v", res)
	}

	// A bomb that lies: its header declares 10 bytes, it inflates to more
	// than the cap.
	var deflated bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestCompression)
	_, _ = fw.Write(bytes.Repeat([]byte(" "), limit+1))
	_ = fw.Close()
	var liar bytes.Buffer
	zw := zip.NewWriter(&liar)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "conversations.json", Method: zip.Deflate, CompressedSize64: uint64(deflated.Len()), UncompressedSize64: 10})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(deflated.Bytes())
	_ = zw.Close()

	honest := zipOf(t, "conversations.json", strings.Repeat(" ", limit+1)+"[]")
	for name, c := range map[string]struct {
		body   []byte
		status int
		want   string
	}{
		"no conversations.json": {zipOf(t, "notes.txt", "hi", "photo.png", "x"), 400, "this ZIP holds no conversations.json, so it is not a ChatGPT data export (it holds notes.txt, photo.png)"},
		"damaged":               {export[:len(export)/2], 400, "cannot be read as one (is it complete?)"},
		"bomb":                  {honest, 413, "larger than 1048576 bytes uncompressed (AGENTIK_MAX_IMPORT_BYTES): import the ZIP with `agentik import FILE`"},
		"lying bomb":            {liar.Bytes(), 400, "is damaged"},
		"bad JSON inside":       {zipOf(t, "conversations.json", "[{\"id\":\"a\",\n \"title\": nope}]"), 400, "not a ChatGPT conversations.json: line 2, column 12: expected the word null"},
	} {
		var e agent.Error
		ts.call(t, "POST", "/agentik/import", string(c.body), c.status, &e)
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: %q, want %q", name, e.Message, c.want)
		}
	}
	if len(honest) > 64<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(honest))
	}
	if n := ts.total(t); n != 2 {
		t.Fatalf("%d conversations after the refused ZIPs, want 2", n)
	}
}

// An import refused for its JSON says where and what was expected, not the
// parser's words.
func TestImportSaysWhereJSONIsWrong(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for body, want := range map[string]string{
		"[{\"id\":\"a\",\n \"title\": nope}]": "not a ChatGPT conversations.json: line 2, column 12: expected the word null (a bare word must be true, false or null; text goes in double quotes), found 'o'",
		`{"format":"agentik","version":1,}`:   "the body is neither agentik JSON nor a ChatGPT conversations.json: line 1, column 33: expected a key in double quotes",
		`{"format":"agentik","version":"1"}`:  `field "version" must be a whole number in range, not a string (line 1, column 33)`,
	} {
		var e agent.Error
		ts.call(t, "POST", "/agentik/import", body, 400, &e)
		if !strings.Contains(e.Message, want) || strings.Contains(e.Message, "invalid character") || strings.Contains(e.Message, "Go value") {
			t.Errorf("%q: %q, want %q", body, e.Message, want)
		}
	}
}
