package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/knowledge"
	"github.com/agentik/agentik/internal/knowledge/knowledgetest"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// handbookPages is the handbook PDF's text, one string a page.
var handbookPages = []string{"Team handbook\nWelcome aboard.", "Holidays\nEvery member has 30 days of paid leave a year.", "Travel\nTrains are preferred over planes."}

// upload sends a file as key: multipart when mp, else JSON base64; it
// returns the status and the decoded File (or error body).
func upload(t *testing.T, url, key, name, mediaType string, data []byte, mp bool) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	ct := "application/json"
	if mp {
		w := multipart.NewWriter(&body)
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
		if mediaType != "" {
			h["Content-Type"] = []string{mediaType}
		}
		part, _ := w.CreatePart(h)
		_, _ = part.Write(data)
		_ = w.Close()
		ct = w.FormDataContentType()
	} else {
		_ = json.NewEncoder(&body).Encode(map[string]string{"name": name, "media_type": mediaType, "data": base64.StdEncoding.EncodeToString(data)})
	}
	req, _ := http.NewRequest("POST", url, &body)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// waitFile waits until file id is no longer processing and returns it.
func waitFile(t *testing.T, p *proc, key, id string) agent.File {
	t.Helper()
	var f agent.File
	testwait.For(t, "file "+id+" to be ingested", func() bool {
		must(t, key, "GET", p.url("/agentik/files/"+id), "", &f)
		return f.Status != agent.FileProcessing
	})
	return f
}

// TestKnowledgeTwoMembers runs the files and knowledge REST surface on
// the real binary, SQLite and PostgreSQL, with two members: uploads
// (multipart and JSON), ingestion of a PDF and a DOCX with positions,
// dedup, bad input (too large, lying type, not a PDF, a zip bomb, an
// encrypted or scanned PDF, empty), search with scores, isolation on
// every route, a shared base, and a turn of an agent with knowledge that
// calls file_search: the model is given the passage and the answer keeps
// it as a citation.
func TestKnowledgeTwoMembers(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "agentik.db")
			if backend == "postgres" {
				db = freshSchema(t)
			}
			tm := startTeam(t, db, "AGENTIK_MAX_FILE_BYTES=200000", "AGENTIK_EMBEDDING_MODEL=fake-embed")
			knowledgeTwoMembers(t, tm)
		})
	}
}

func knowledgeTwoMembers(t *testing.T, tm *team) {
	u := tm.p.url
	ann, bob := tm.ann.key, tm.bob.key
	files := u("/agentik/files")

	// Uploads: a PDF by multipart, a DOCX as JSON; the same bytes again
	// answer the same file.
	code, pdfF := upload(t, files, ann, "handbook.pdf", "application/pdf", knowledgetest.PDF(handbookPages...), true)
	if code != 201 || pdfF["status"] != agent.FileProcessing || pdfF["sha256"] == "" {
		t.Fatalf("upload pdf: %d %v", code, pdfF)
	}
	pdfID := pdfF["id"].(string)
	if !strings.HasPrefix(pdfID, "file-") {
		t.Fatalf("file id %q", pdfID)
	}
	docx := knowledgetest.DOCX(knowledgetest.Paragraph{Style: "Heading1", Text: "Expenses"}, knowledgetest.Paragraph{Text: "Receipts go to finance within 14 days."})
	code, docF := upload(t, files, ann, "policy.docx", "", docx, false)
	if code != 201 {
		t.Fatalf("upload docx: %d %v", code, docF)
	}
	docID := docF["id"].(string)
	if _, again := upload(t, files, ann, "copy.pdf", "", knowledgetest.PDF(handbookPages...), true); again["id"] != pdfID {
		t.Fatalf("the same bytes again: %v, want %s", again, pdfID)
	}
	if f := waitFile(t, tm.p, ann, pdfID); f.Status != agent.FileProcessed || f.Chunks < 3 {
		t.Fatalf("pdf: %+v", f)
	}
	if f := waitFile(t, tm.p, ann, docID); f.Status != agent.FileProcessed {
		t.Fatalf("docx: %+v", f)
	}

	// Bad input: refused at upload, or failed with a reason.
	for _, c := range []struct {
		name, mt string
		data     []byte
		code     int
		want     string
	}{
		{"empty.txt", "text/plain", nil, 400, "empty"},
		{"big.txt", "text/plain", bytes.Repeat([]byte("a "), 150000), 413, "AGENTIK_MAX_FILE_BYTES"},
		{"lie.pdf", "application/pdf", []byte("just text"), 400, "not one"},
		{"lie.txt", "text/plain", []byte{0, 1, 2, 0xff}, 400, "binary"},
	} {
		code, body := upload(t, files, ann, c.name, c.mt, c.data, true)
		if code != c.code || !strings.Contains(fmt.Sprint(body), c.want) {
			t.Errorf("%s: %d %v, want %d with %q", c.name, code, body, c.code, c.want)
		}
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"scan.pdf", knowledgetest.PDF("", ""), "no text layer"},
		{"locked.pdf", knowledgetest.EncryptedPDF(), "encrypted PDF"},
		{"broken.pdf", []byte("%PDF-1.4\nnot really"), "not a readable PDF"},
		{"bomb.docx", knowledgetest.ZipBomb(100 << 20), "zip bomb"},
	} {
		code, body := upload(t, files, ann, c.name, "", c.data, true)
		if code != 201 {
			t.Fatalf("%s: %d %v", c.name, code, body)
		}
		if f := waitFile(t, tm.p, ann, body["id"].(string)); f.Status != agent.FileFailed || !strings.Contains(f.Error, c.want) || f.Chunks != 0 {
			t.Errorf("%s: %+v, want failed with %q", c.name, f, c.want)
		}
	}

	// A knowledge base; its search shows the passage with its page.
	var kb agent.Knowledge
	must(t, ann, "POST", u("/agentik/knowledge"), `{"name":"Handbook","file_ids":["`+pdfID+`"]}`, &kb)
	if !strings.HasPrefix(kb.ID, "vs_") || kb.Visibility != "private" || kb.Counts.Processed != 1 || kb.Status != agent.KnowledgeReady {
		t.Fatalf("knowledge: %+v", kb)
	}
	must(t, ann, "POST", u("/agentik/knowledge/"+kb.ID+"/files"), `{"file_id":"`+docID+`"}`, &kb)
	var res struct{ Results []agent.Passage }
	must(t, ann, "POST", u("/agentik/knowledge/"+kb.ID+"/search"), `{"query":"how many days of paid leave"}`, &res)
	if len(res.Results) == 0 || res.Results[0].Page != 2 || res.Results[0].FileName != "handbook.pdf" || !strings.Contains(res.Results[0].Text, "30 days") || res.Results[0].Score <= 0 {
		t.Fatalf("search: %+v", res.Results)
	}
	must(t, ann, "POST", u("/agentik/knowledge/"+kb.ID+"/search"), `{"query":"receipts"}`, &res)
	if len(res.Results) == 0 || res.Results[0].Heading != "Expenses" || res.Results[0].FileID != docID {
		t.Fatalf("search docx: %+v", res.Results)
	}

	// Bob sees none of it, on every route.
	for _, c := range [][2]string{
		{"GET", "/agentik/files/" + pdfID}, {"GET", "/agentik/files/" + pdfID + "/content"}, {"DELETE", "/agentik/files/" + pdfID},
		{"GET", "/agentik/knowledge/" + kb.ID}, {"PATCH", "/agentik/knowledge/" + kb.ID}, {"DELETE", "/agentik/knowledge/" + kb.ID},
		{"POST", "/agentik/knowledge/" + kb.ID + "/search"}, {"POST", "/agentik/knowledge/" + kb.ID + "/files"},
	} {
		body := `{"query":"leave","file_id":"` + pdfID + `","name":"x"}`
		if code, b := call(t, bob, c[0], u(c[1]), body); code != 404 || !strings.Contains(string(b), "not_found") {
			t.Errorf("bob %s %s: %d %s", c[0], c[1], code, b)
		}
	}
	var bobKB agent.Knowledge
	must(t, bob, "POST", u("/agentik/knowledge"), `{"name":"mine"}`, &bobKB)
	if code, b := call(t, bob, "POST", u("/agentik/knowledge/"+bobKB.ID+"/files"), `{"file_id":"`+pdfID+`"}`); code != 404 {
		t.Errorf("bob adds ann's file: %d %s", code, b)
	}
	var list struct {
		Files     []agent.File
		Knowledge []agent.Knowledge
	}
	must(t, bob, "GET", u("/agentik/files"), "", &list)
	must(t, bob, "GET", u("/agentik/knowledge"), "", &list)
	if len(list.Files) != 0 || len(list.Knowledge) != 1 {
		t.Fatalf("bob's lists: %+v", list)
	}

	// Shared: bob reads and searches it, but does not change it.
	must(t, ann, "PATCH", u("/agentik/knowledge/"+kb.ID), `{"visibility":"shared"}`, &kb)
	must(t, bob, "POST", u("/agentik/knowledge/"+kb.ID+"/search"), `{"query":"trains"}`, &res)
	if len(res.Results) == 0 || res.Results[0].Page != 3 {
		t.Fatalf("bob's search of the shared base: %+v", res.Results)
	}
	if code, b := call(t, bob, "DELETE", u("/agentik/knowledge/"+kb.ID), ""); code != 403 {
		t.Errorf("bob deletes the shared base: %d %s", code, b)
	}
	must(t, ann, "PATCH", u("/agentik/knowledge/"+kb.ID), `{"visibility":"private"}`, &kb)

	// A turn of ann's agent with the base: file_search gives the model
	// the passage; the answer cites it.
	var d agent.AgentDef
	must(t, ann, "POST", u("/agentik/agents"), `{"slug":"handbook","name":"Handbook helper","knowledge":["`+kb.ID+`"]}`, &d)
	if code, b := call(t, bob, "POST", u("/agentik/agents"), `{"slug":"thief","name":"Thief","knowledge":["`+kb.ID+`"]}`); code != 404 {
		t.Errorf("bob's agent on ann's base: %d %s", code, b)
	}
	var c agent.Conversation
	must(t, ann, "POST", u("/agentik/conversations"), `{"agent":"`+d.Slug+`"}`, &c)
	must(t, ann, "POST", u("/agentik/conversations/"+c.ID+"/send"), `{"content":[{"type":"text","body":"[[tool=file_search args={\"query\":\"paid leave\"}]]"}]}`, nil)
	waitEnd(t, ann, u("/agentik/conversations/"+c.ID+"/events"))
	var msgs struct{ Messages []agent.Message }
	must(t, ann, "GET", u("/agentik/conversations/"+c.ID+"/messages"), "", &msgs)
	last := msgs.Messages[len(msgs.Messages)-1]
	if last.Type != agent.MessageAssistant || len(last.Citations) == 0 || last.Citations[0].FileID != pdfID || last.Citations[0].Page != 2 {
		t.Fatalf("answer: %+v", last)
	}
	if !givenPassage(tm, "30 days of paid leave") {
		t.Fatal("the model was not given the passage")
	}
	if tm.fake.Embeddings() == 0 {
		t.Fatal("no embedding was asked for")
	}

	// "-file_search" in an agent's tools takes the tool away.
	offers := func(slug string) bool {
		t.Helper()
		var c agent.Conversation
		must(t, ann, "POST", u("/agentik/conversations"), `{"agent":"`+slug+`"}`, &c)
		must(t, ann, "POST", u("/agentik/conversations/"+c.ID+"/send"), `{"content":[{"type":"text","body":"which tools, `+slug+`?"}]}`, nil)
		waitEnd(t, ann, u("/agentik/conversations/"+c.ID+"/events"))
		for _, r := range tm.fake.Requests() {
			if strings.Contains(string(r.Body), "which tools, "+slug+"?") {
				return strings.Contains(string(r.Body), `"name":"file_search"`)
			}
		}
		t.Fatal("no request of the turn")
		return false
	}
	must(t, ann, "POST", u("/agentik/agents"), `{"slug":"no-search","name":"No search","tools":["*","-file_search"],"knowledge":["`+kb.ID+`"]}`, nil)
	if offers("no-search") || !offers(d.Slug) {
		t.Error("file_search is offered to an agent with -file_search, or not to one without")
	}

	// A conversation with the base attached (no agent): the same.
	var kc agent.Conversation
	must(t, ann, "POST", u("/agentik/conversations"), `{"knowledge":["`+kb.ID+`"]}`, &kc)
	if fmt.Sprint(kc.Knowledge) != "["+kb.ID+"]" {
		t.Fatalf("conversation knowledge: %+v", kc)
	}
	must(t, ann, "POST", u("/agentik/conversations/"+kc.ID+"/send"), `{"content":[{"type":"text","body":"[[tool=file_search args={\"query\":\"receipts\"}]]"}]}`, nil)
	waitEnd(t, ann, u("/agentik/conversations/"+kc.ID+"/events"))
	must(t, ann, "GET", u("/agentik/conversations/"+kc.ID+"/messages"), "", &msgs)
	if last := msgs.Messages[len(msgs.Messages)-1]; len(last.Citations) == 0 || last.Citations[0].FileID != docID || last.Citations[0].Heading != "Expenses" {
		t.Fatalf("answer of the conversation with knowledge: %+v", last)
	}
	var bc agent.Conversation
	must(t, bob, "POST", u("/agentik/conversations"), `{}`, &bc)
	if code, b := call(t, bob, "PATCH", u("/agentik/conversations/"+bc.ID), `{"knowledge":["`+kb.ID+`"]}`); code != 404 {
		t.Errorf("bob attaches ann's base: %d %s", code, b)
	}
	if code, b := call(t, bob, "POST", u("/agentik/conversations"), `{"knowledge":["`+kb.ID+`"]}`); code != 404 {
		t.Errorf("bob creates a conversation on ann's base: %d %s", code, b)
	}
	must(t, ann, "PATCH", u("/agentik/conversations/"+kc.ID), `{"knowledge":[]}`, &kc)
	must(t, ann, "GET", u("/agentik/conversations/"+kc.ID), "", &kc)
	if len(kc.Knowledge) != 0 {
		t.Fatalf("knowledge after it was taken off: %v", kc.Knowledge)
	}

	// Deleting the file takes it out of the base and its passages out of search.
	must(t, ann, "DELETE", u("/agentik/files/"+pdfID), "", nil)
	must(t, ann, "POST", u("/agentik/knowledge/"+kb.ID+"/search"), `{"query":"leave trains handbook"}`, &res)
	for _, p := range res.Results {
		if p.FileID == pdfID {
			t.Fatalf("a deleted file's passage: %+v", p)
		}
	}
}

// givenPassage reports whether a request to the model carried text in a
// tool result (file_search's).
func givenPassage(tm *team, text string) bool {
	for _, r := range tm.fake.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && strings.Contains(m.Content, text) {
				return true
			}
		}
	}
	return false
}

// TestKill9MidIngest kills the real binary while it ingests a 200-page
// PDF (its embeddings held), then restarts it: the file, left
// processing with no chunk stored, is ingested again and ends processed
// with every chunk once.
func TestKill9MidIngest(t *testing.T) {
	t.Parallel()
	fake, fakeURL := llmtest.NewHTTPServer(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	addr := freeAddr(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_EMBEDDING_MODEL=fake-embed"}
	p := start(t, addr, db, env...)
	held, release := fake.HoldEmbeddings()
	defer release()
	pages := make([]string, 200)
	for i := range pages {
		pages[i] = fmt.Sprintf("Chapter %d\nPage %d of the handbook says rule %d applies to everyone.", i+1, i+1, i*7)
	}
	pdf := knowledgetest.PDF(pages...)
	code, f := upload(t, p.url("/agentik/files"), "", "big.pdf", "application/pdf", pdf, true)
	if code != 201 {
		t.Fatalf("upload: %d %v", code, f)
	}
	id := f["id"].(string)
	<-held // extracted, embedding: mid-ingest
	count := func() (rows, distinct int) {
		conn, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.QueryRow("SELECT COUNT(*), COUNT(DISTINCT ord) FROM file_chunk WHERE file_id = ?", id).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return rows, distinct
	}
	if rows, _ := count(); rows != 0 {
		t.Fatalf("%d chunks stored before the file's ingestion ended", rows)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	release()

	p = start(t, addr, db, env...)
	var got agent.File
	testwait.For(t, "the file to be ingested after the restart", func() bool {
		getJSON(t, p.url("/agentik/files/"+id), &got)
		return got.Status != agent.FileProcessing
	})
	want, err := knowledge.Extractor{}.Extract(context.Background(), "big.pdf", knowledge.TypePDF, pdf)
	if err != nil {
		t.Fatal(err)
	}
	rows, distinct := count()
	if got.Status != agent.FileProcessed || got.Chunks != len(want) || rows != len(want) || distinct != rows {
		t.Fatalf("after the restart: %+v, %d rows (%d distinct), want %d chunks", got, rows, distinct, len(want))
	}
}

// TestFileStatusAndRetry: a file's progress reaches its owner's stream
// (file_status events) and no one else's; an embedding endpoint that
// fails leaves the file failed with "embeddings: …", and a retry once it
// works ingests it; a user's files together are capped.
func TestFileStatusAndRetry(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"), "AGENTIK_EMBEDDING_MODEL=fake-embed", "AGENTIK_MAX_USER_FILE_BYTES=3000")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	annEvents := sse(t, ctx, tm.ann.key, tm.p.url("/agentik/events"), "")
	bobEvents := sse(t, ctx, tm.bob.key, tm.p.url("/agentik/events"), "")
	// status reads a stream until file id's status is want.
	status := func(ch <-chan sseEvent, id, want string) []string {
		t.Helper()
		var seen []string
		for ev := range ch {
			var a struct {
				Type string
				File *agent.File
			}
			if json.Unmarshal([]byte(ev.data), &a) != nil || a.Type != agent.AgentFileStatus || a.File == nil {
				continue
			}
			seen = append(seen, a.File.ID+" "+a.File.Status)
			if a.File.ID == id && a.File.Status == want {
				return seen
			}
		}
		t.Fatalf("the stream ended before file %s was %s (saw %v)", id, want, seen)
		return nil
	}

	tm.fake.FailEmbeddings(true)
	code, f := upload(t, tm.p.url("/agentik/files"), tm.ann.key, "notes.md", "", []byte("# Notes\n\nThe office plant needs water on Mondays."), false)
	if code != 201 {
		t.Fatalf("upload: %d %v", code, f)
	}
	id := f["id"].(string)
	if seen := status(annEvents, id, agent.FileFailed); !strings.Contains(strings.Join(seen, ","), id+" "+agent.FileProcessing) {
		t.Errorf("ann's stream: %v, want processing then failed", seen)
	}
	if got := waitFile(t, tm.p, tm.ann.key, id); !strings.HasPrefix(got.Error, "embeddings: ") {
		t.Fatalf("failed file: %+v", got)
	}
	tm.fake.FailEmbeddings(false)
	must(t, tm.ann.key, "POST", tm.p.url("/agentik/files/"+id+"/retry"), "", nil)
	status(annEvents, id, agent.FileProcessed)
	if code, b := call(t, tm.ann.key, "POST", tm.p.url("/agentik/files/"+id+"/retry"), ""); code != 409 {
		t.Errorf("retry of a processed file: %d %s", code, b)
	}

	// Bob's stream carries his own file, and none of ann's.
	code, bf := upload(t, tm.p.url("/agentik/files"), tm.bob.key, "bob.txt", "", []byte("bob's own words"), false)
	if code != 201 {
		t.Fatalf("bob's upload: %d %v", code, bf)
	}
	for _, s := range status(bobEvents, bf["id"].(string), agent.FileProcessed) {
		if strings.HasPrefix(s, id) {
			t.Errorf("bob's stream carried ann's file: %s", s)
		}
	}

	// The per-user cap: ann's files take ~50 bytes of 3000.
	if code, b := upload(t, tm.p.url("/agentik/files"), tm.ann.key, "big.txt", "", bytes.Repeat([]byte("b "), 1500), false); code != 413 || !strings.Contains(fmt.Sprint(b), "AGENTIK_MAX_USER_FILE_BYTES") {
		t.Errorf("past the user's cap: %d %v", code, b)
	}
}
