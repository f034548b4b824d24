package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/archive"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/testwait"
)

// withHistoryBytes bounds a page of history at n bytes.
func withHistoryBytes(n int) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.HistoryBytes = n }
}

// bigConversation imports a conversation of n messages of about size
// bytes each (user and assistant in turn), numbered in their text.
func bigConversation(t *testing.T, ts *testServer, n, size int) agent.Conversation {
	t.Helper()
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var ms []agent.Message
	for i := range n {
		typ := agent.MessageUser
		if i%2 == 1 {
			typ = agent.MessageAssistant
		}
		ms = append(ms, agent.Message{Type: typ, Date: start.Add(time.Duration(i) * time.Second), Content: []agent.Content{agent.Text(fmt.Sprintf("m%03d <&> %s", i, strings.Repeat("x", size)))}})
	}
	res, err := ts.Convs.Import(t.Context(), []agent.ImportConversation{{Source: "test:" + agent.NewID(), Title: "big", CreatedAt: start, Messages: ms}})
	if err != nil || len(res.Conversations) != 1 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	return res.Conversations[0]
}

// number is the index a bigConversation message carries in its text.
func number(t *testing.T, m agent.Message) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(m.Content[0].Body, "m%03d", &i); err != nil {
		t.Fatalf("message %s: %v", m.ID, err)
	}
	return i
}

// historyPage reads one page of history over REST, checking its size.
func historyPage(t *testing.T, ts *testServer, id, query string, bound int) protocol.MessagesResult {
	t.Helper()
	resp := ts.do(t, "GET", "/agentik/conversations/"+id+"/messages"+query, "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("messages%s: %d %s", query, resp.StatusCode, body)
	}
	var p protocol.MessagesResult
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	// The bound is of the stored JSON; the wire adds a few fields.
	if len(p.Messages) > 1 && len(body) > bound+bound/16 {
		t.Fatalf("messages%s: %d messages in %d bytes, past the bound of %d", query, len(p.Messages), len(body), bound)
	}
	return p
}

// TestHistoryPagesAreBoundedInBytes: 40 messages of 16 KiB under a 75 KiB
// bound come in pages of a few, each with the cursor to go on; paging on by
// offset (forward) or end (back from the end, as the UI does) reads every
// message exactly once; get_messages over WebSocket pages the same.
func TestHistoryPagesAreBoundedInBytes(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	// The ratios are what the test is about (a page holds 4.7 messages,
	// the conversation 8.5 pages); 16 KiB messages keep them at a quarter
	// of the bytes 64 KiB ones cost under -race.
	const n, size, bound = 40, 16 << 10, 75 << 10
	ts := newTestServer(t, withHistoryBytes(bound))
	c := bigConversation(t, ts, n, size)

	// No paging parameters, as an old client asks: a bounded page, and
	// where the next starts.
	p := historyPage(t, ts, c.ID, "", bound)
	if len(p.Messages) == 0 || len(p.Messages) >= n || p.NextOffset != len(p.Messages) {
		t.Fatalf("first page: %d messages, next_offset %d", len(p.Messages), p.NextOffset)
	}
	seen := make([]int, n)
	pages := 0
	for q := ""; ; {
		p := historyPage(t, ts, c.ID, q, bound)
		pages++
		for _, m := range p.Messages {
			seen[number(t, m)]++
		}
		if p.NextOffset == 0 {
			break
		}
		q = fmt.Sprintf("?offset=%d", p.NextOffset)
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("forward: message %d read %d times (%d pages)", i, k, pages)
		}
	}
	if pages < n*size/bound {
		t.Errorf("forward: %d pages, want at least %d", pages, n*size/bound)
	}

	// Back from the end: each page the latest before the one after it.
	seen = make([]int, n)
	last := n
	for end := n; end > 0; {
		p := historyPage(t, ts, c.ID, fmt.Sprintf("?end=%d", end), bound)
		if len(p.Messages) == 0 || p.NextEnd != end-len(p.Messages) {
			t.Fatalf("end=%d: %d messages, next_end %d", end, len(p.Messages), p.NextEnd)
		}
		if i := number(t, p.Messages[len(p.Messages)-1]); i != last-1 {
			t.Fatalf("end=%d: the page ends at message %d, want %d", end, i, last-1)
		}
		for _, m := range p.Messages {
			seen[number(t, m)]++
		}
		last = number(t, p.Messages[0])
		end = p.NextEnd
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("back: message %d read %d times", i, k)
		}
	}

	// A limit below the byte bound: the limit ends the page, with a cursor.
	if p := historyPage(t, ts, c.ID, "?limit=2", bound); len(p.Messages) != 2 || p.NextOffset != 2 {
		t.Fatalf("limit=2: %d messages, next_offset %d", len(p.Messages), p.NextOffset)
	}
	// The last page has no cursor.
	if p := historyPage(t, ts, c.ID, fmt.Sprintf("?offset=%d", n-1), bound); len(p.Messages) != 1 || p.NextOffset != 0 {
		t.Fatalf("last page: %d messages, next_offset %d", len(p.Messages), p.NextOffset)
	}
	// A message bigger than the bound still comes, alone.
	small := newTestServer(t, withHistoryBytes(size/4))
	c2 := bigConversation(t, small, 3, size)
	if p := historyPage(t, small, c2.ID, "", 1<<30); len(p.Messages) != 1 || p.NextOffset != 1 {
		t.Fatalf("over the bound: %d messages, next_offset %d", len(p.Messages), p.NextOffset)
	}
	for _, q := range []string{"?end=0", "?end=-1", "?end=x", "?end=3&offset=1"} {
		resp := ts.do(t, "GET", "/agentik/conversations/"+c.ID+"/messages"+q, "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !bytes.Contains(body, []byte(`"bad_request"`)) || !bytes.Contains(body, []byte("end")) {
			t.Errorf("messages%s: %d %s, want 400 bad_request naming end", q, resp.StatusCode, body)
		}
	}

	// get_messages over WebSocket: the same pages.
	w := dialWS(t, ts)
	defer w.close()
	seen = make([]int, n)
	for offset := 0; ; {
		var p protocol.MessagesResult
		w.ok("get_messages", map[string]any{"conversation_id": c.ID, "offset": offset, "limit": 1000}, &p)
		if len(p.Messages)*size > bound {
			t.Fatalf("ws page of %d messages", len(p.Messages))
		}
		for _, m := range p.Messages {
			seen[number(t, m)]++
		}
		if p.NextOffset == 0 {
			break
		}
		offset = p.NextOffset
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("ws: message %d read %d times", i, k)
		}
	}
	var back protocol.MessagesResult
	w.ok("get_messages", map[string]any{"conversation_id": c.ID, "end": n}, &back)
	if len(back.Messages) == 0 || back.NextEnd != n-len(back.Messages) || number(t, back.Messages[len(back.Messages)-1]) != n-1 {
		t.Fatalf("ws end=%d: %d messages, next_end %d", n, len(back.Messages), back.NextEnd)
	}
	w.fail("get_messages", map[string]any{"conversation_id": c.ID, "end": 0}, "bad_request")
}

// TestTempHistoryPagesAreBoundedInBytes: a temp conversation's history
// (kept in memory, without seqs) pages the same.
func TestTempHistoryPagesAreBoundedInBytes(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	const sends, size, bound = 6, 48 << 10, 120 << 10
	ts := newTestServer(t, withHistoryBytes(bound))
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("scratch", true)
	sub := w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	for i := range sends {
		w.send(c.ID, fmt.Sprintf("m%03d %s", i, strings.Repeat("y", size)))
		w.collect(sub.Sub, turnEnds(c.ID))
	}
	var users []string
	for offset, pages := 0, 0; ; pages++ {
		var p protocol.MessagesResult
		w.ok("get_messages", map[string]any{"conversation_id": c.ID, "offset": offset}, &p)
		total := 0
		for _, m := range p.Messages {
			b, _ := json.Marshal(m)
			total += len(b)
			if m.Type == agent.MessageUser {
				users = append(users, m.Content[0].Body[:4])
			}
		}
		if len(p.Messages) > 1 && total > bound {
			t.Fatalf("page of %d messages, %d bytes", len(p.Messages), total)
		}
		if p.NextOffset == 0 {
			if pages < 2 {
				t.Fatalf("%d pages", pages+1)
			}
			break
		}
		offset = p.NextOffset
	}
	if got := strings.Join(users, " "); got != "m000 m001 m002 m003 m004 m005" {
		t.Fatalf("user messages %s", got)
	}
	var back protocol.MessagesResult
	w.ok("get_messages", map[string]any{"conversation_id": c.ID, "end": 2 * sends}, &back)
	if len(back.Messages) == 0 || back.NextEnd != 2*sends-len(back.Messages) {
		t.Fatalf("temp end: %d messages, next_end %d", len(back.Messages), back.NextEnd)
	}
}

// gapWriter records the most a handler allocated between two writes (and
// before the first): a handler that builds its answer whole allocates all
// of it before writing it.
type gapWriter struct {
	header http.Header
	last   uint64 // TotalAlloc at the last Write (or the start)
	gap    uint64 // the largest allocation between two writes
	n      int
	body   []byte // what was written (kept outside the measured gaps)
}

func newGapWriter(capacity int) *gapWriter {
	g := &gapWriter{header: http.Header{}, body: make([]byte, 0, capacity)}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g.last = ms.TotalAlloc
	return g
}

func (g *gapWriter) Header() http.Header { return g.header }
func (g *gapWriter) WriteHeader(int)     {}
func (g *gapWriter) Write(b []byte) (int, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g.gap = max(g.gap, ms.TotalAlloc-g.last)
	g.n += len(b)
	g.body = append(g.body, b...)
	runtime.ReadMemStats(&ms) // what ReadMemStats itself (and the copy) allocated is not the handler's
	g.last = ms.TotalAlloc
	return len(b), nil
}

// TestExportStreams: the exports of a conversation of 40 × 128 KiB (one
// conversation as JSON and Markdown, and the backup of everything) never
// allocate as much as it between two writes (built whole, several times
// it comes before the first), and the JSON is byte for byte what
// encoding the whole Archive gives, which import reads back. 40 pages of
// 128 KiB keep the ratio of 40 of 256 KiB (a page's copies are about half
// the document under -race) at half the bytes, which -race makes the
// test's cost; below ~100 KiB a fixed ~1 MB between writes narrows it.
func TestExportStreams(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	const n, size = 40, 128 << 10
	ts := newTestServer(t, withHistoryBytes(size))
	c := bigConversation(t, ts, n, size)
	bodies := map[string][]byte{} // the answers, checked below
	for _, path := range []string{"/agentik/conversations/" + c.ID + "/export", "/agentik/conversations/" + c.ID + "/export?format=markdown", "/agentik/export"} {
		req := httptest.NewRequestWithContext(t.Context(), "GET", "http://127.0.0.1"+path, nil)
		req.RemoteAddr = "127.0.0.1:1234"
		w := newGapWriter(2 * n * size)
		ts.App.ServeHTTP(w, req)
		bodies[path] = w.body
		if w.n < n*size {
			t.Fatalf("%s: %d bytes written, want over %d", path, w.n, n*size)
		}
		// Streamed, a page (one message) and its copies come between
		// writes: about 2 MB (2.7 under -race, where sync.Pool keeps less).
		// Built whole, the messages read and decoded and the document
		// encoded (several times its 5 MiB) would come before the first.
		if w.gap > uint64(n*size) {
			t.Errorf("%s: %d bytes allocated between two writes of %d bytes in all", path, w.gap, w.n)
		}
		t.Logf("%s: at most %d bytes allocated between two writes of %d", path, w.gap, w.n)
	}

	doc := bodies["/agentik/conversations/"+c.ID+"/export"]
	var a agent.Archive
	if err := json.Unmarshal(doc, &a); err != nil || len(a.Conversations) != 1 || len(a.Conversations[0].Messages) != n {
		t.Fatalf("export: %v", err)
	}
	var want bytes.Buffer
	_ = json.NewEncoder(&want).Encode(a)
	if !bytes.Equal(doc, want.Bytes()) {
		t.Fatalf("the streamed export differs from the Archive encoded whole (%d and %d bytes)", len(doc), want.Len())
	}
	md := bodies["/agentik/conversations/"+c.ID+"/export?format=markdown"]
	if got, wantMD := string(md), archive.Markdown(a.Conversations[0].Conversation, a.Conversations[0].Messages); got != wantMD {
		t.Fatalf("the streamed Markdown differs from Markdown of the whole (%d and %d bytes)", len(got), len(wantMD))
	}
	var res agent.ImportResult
	other := newTestServer(t)
	other.call(t, "POST", "/agentik/import", string(doc), 201, &res)
	if len(res.Conversations) != 1 || res.Conversations[0].MessageCount != n {
		t.Fatalf("import of the export: %+v", res)
	}
}

// TestExportEmbedStreams: an export with ?files=embed reads each file
// when its part is written and encodes it into the body as it goes: a
// message attaching 4 files of 1 MiB allocates about one file's read
// between two writes, not the message encoded whole with its files in
// base64 (four times as much, and more in copies).
func TestExportEmbedStreams(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	const files, size = 4, 1 << 20
	ts := newTestServer(t)
	parts := []string{`{"type":"text","body":"four files"}`}
	var want []string
	for i := range files {
		data := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(fmt.Sprintf("file %d, line of text\n", i)), size/22))
		want = append(want, data)
		parts = append(parts, fmt.Sprintf(`{"type":"file","name":"f%d.txt","mime":"text/plain","data":%q}`, i, data))
	}
	var res agent.ImportResult
	ts.call(t, "POST", "/agentik/import", `{"format":"agentik","version":1,"conversations":[{"conversation":{"id":"src"},"messages":[{"type":"user_message","id":"m1","content":[`+strings.Join(parts, ",")+`]}]}]}`, 201, &res)
	// Their ingestion allocates too: it ends first.
	testwait.For(t, "the files to be processed", func() bool {
		var l struct{ Files []agent.File }
		ts.call(t, "GET", "/agentik/files", "", 200, &l)
		return len(l.Files) == files && !slices.ContainsFunc(l.Files, func(f agent.File) bool { return f.Status == agent.FileProcessing })
	})

	req := httptest.NewRequestWithContext(t.Context(), "GET", "http://127.0.0.1/agentik/conversations/"+res.Conversations[0].ID+"/export?files=embed", nil)
	req.RemoteAddr = "127.0.0.1:1234"
	w := newGapWriter(2 * files * size)
	ts.App.ServeHTTP(w, req)
	var a agent.Archive
	if err := json.Unmarshal(w.body, &a); err != nil || len(a.Conversations) != 1 {
		t.Fatalf("export: %v", err)
	}
	var got []string
	for _, p := range a.Conversations[0].Messages[0].Content {
		if p.Type == agent.ContentFile {
			got = append(got, p.Data)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the export's files differ from the imported ones (%d parts)", len(got))
	}
	if w.gap > 3*size {
		t.Errorf("%d bytes allocated between two writes of %d bytes in all", w.gap, w.n)
	}
	t.Logf("at most %d bytes allocated between two writes of %d", w.gap, w.n)
}
