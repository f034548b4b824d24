package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestSendFilePart: the WebSocket/REST send takes a file part, by its
// bytes or by the file_id of an upload. A small document's text is in
// the user message the model reads; one too large for the message's
// share of the window is not, the model is told to search it, and its
// file_search finds the passage (waiting for the file to be processed).
// The stored message keeps the file's reference; a file part with bad
// base64 or of a type nobody reads is refused and stores nothing.
func TestSendFilePart(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var c agent.Conversation
	postJSONTo(t, ts.URL+"/agentik/conversations", `{}`, &c)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	// A small document, by its bytes: inlined.
	small := `{"content":[{"type":"text","body":"read it"},{"type":"file","name":"note.md","mime":"text/markdown","data":"` + b64("# Note\n\nThe small secret is TEAL-4.") + `"}]}`
	if code, body := post("/agentik/conversations/"+c.ID+"/send", small); code/100 != 2 {
		t.Fatalf("send small: %d %s", code, body)
	}
	waitIdle(t, ts, c.ID)
	if !modelUserRead(ts, "TEAL-4") {
		t.Errorf("the model was not given the small document's text")
	}

	// A large one: searched, not inlined.
	var big strings.Builder
	for i := 0; big.Len() < 300<<10; i++ {
		fmt.Fprintf(&big, "Paragraph %d is filler about nothing in particular, repeated to make the document long.\n\n", i)
	}
	big.WriteString("The hidden clause says ZINC-8 is the access code.\n")
	large := `{"content":[{"type":"text","body":"[[tool=file_search args={\"query\":\"hidden clause access code\"}]]"},{"type":"file","name":"big.txt","mime":"text/plain","data":"` + b64(big.String()) + `"}]}`
	if code, body := post("/agentik/conversations/"+c.ID+"/send", large); code/100 != 2 {
		t.Fatalf("send large: %d %s", code, body)
	}
	waitIdle(t, ts, c.ID)
	if modelUserRead(ts, "ZINC-8") || !modelUserRead(ts, "search it with the file_search tool") {
		t.Errorf("the large document was inlined, or the model was not told to search it")
	}
	found := false
	for _, r := range ts.Fake.Requests() {
		for _, m := range r.Messages {
			found = found || (m.Role == "tool" && strings.Contains(m.Content, "ZINC-8"))
		}
	}
	if !found {
		t.Errorf("file_search did not find the large document's passage")
	}

	// The history keeps the references.
	var page struct{ Messages []agent.Message }
	getJSONFrom(t, ts.URL+"/agentik/conversations/"+c.ID+"/messages", &page)
	var names []string
	for _, m := range page.Messages {
		for _, p := range m.Content {
			if p.Type == agent.ContentFile {
				if !strings.HasPrefix(p.FileID, "file-") || p.Data != "" || p.Body != "" {
					t.Errorf("stored file part: %+v", p)
				}
				names = append(names, p.Name)
			}
		}
	}
	if fmt.Sprint(names) != "[note.md big.txt]" {
		t.Errorf("stored file parts: %v", names)
	}

	// Refused, nothing stored.
	var before struct{ Files []agent.File }
	getJSONFrom(t, ts.URL+"/agentik/files", &before)
	for _, bad := range []string{
		`{"content":[{"type":"file","name":"x.txt","mime":"text/plain","data":"@@@"}]}`,
		`{"content":[{"type":"file","name":"song.mp3","mime":"audio/mpeg","data":"` + base64.StdEncoding.EncodeToString([]byte{0xff, 0xfb, 0x90, 0, 1, 2}) + `"}]}`,
		`{"content":[{"type":"file","file_id":"file-nobody"}]}`,
		// A good new file then a bad one: the good one is not kept either.
		`{"content":[{"type":"file","name":"fresh.txt","mime":"text/plain","data":"` + b64("fresh text") + `"},{"type":"file","name":"y.txt","data":"@@@"}]}`,
	} {
		if code, body := post("/agentik/conversations/"+c.ID+"/send", bad); code/100 != 4 {
			t.Errorf("send %s: %d %s", bad, code, body)
		}
	}
	var after struct{ Files []agent.File }
	getJSONFrom(t, ts.URL+"/agentik/files", &after)
	if len(after.Files) != len(before.Files) || len(before.Files) != 2 {
		t.Errorf("files: %d before, %d after the refusals", len(before.Files), len(after.Files))
	}
}

// modelUserRead reports whether a user message the fake model was given
// holds text.
func modelUserRead(ts *testServer, text string) bool {
	for _, r := range ts.Fake.Requests() {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, text) {
				return true
			}
		}
	}
	return false
}

// TestImportFileParts: an agentik export of a conversation with a file
// part imports again. Its owner's import keeps the reference (the file is
// theirs) and the model reads the document in the next turn; another
// member's import of it is bad_request naming what to do, and writes
// nothing; their import of the part with its bytes makes the file theirs.
// An import whose second conversation fails keeps none of the files its
// first stored.
func TestImportFileParts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	_, bobKey := ts.member(t, admin, "bob")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/conversations", `{}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	ts.as(t, annKey, "POST", "/agentik/conversations/"+c.ID+"/send",
		`{"content":[{"type":"text","body":"read it"},{"type":"file","name":"note.md","mime":"text/markdown","data":"`+b64("# Note\n\nThe imported secret is OCHRE-5.")+`"}]}`, 200)
	waitIdle(t, ts, c.ID)
	export := ts.as(t, annKey, "GET", "/agentik/conversations/"+c.ID+"/export", "", 200)
	var annFiles struct{ Files []agent.File }
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "GET", "/agentik/files", "", 200)), &annFiles); err != nil || len(annFiles.Files) != 1 {
		t.Fatalf("ann's files: %+v %v", annFiles, err)
	}
	annFile := annFiles.Files[0].ID
	if !strings.Contains(export, `"file_id":"`+annFile+`"`) {
		t.Fatalf("the export does not reference the file: %s", export)
	}

	// Ann's own import (the original deleted first: an import is once per source).
	ts.as(t, annKey, "DELETE", "/agentik/conversations/"+c.ID, "", 204)
	var res agent.ImportResult
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/import", export, 201)), &res); err != nil || len(res.Conversations) != 1 {
		t.Fatalf("ann's import: %+v %v", res, err)
	}
	imported := res.Conversations[0].ID
	before := len(ts.Fake.Requests())
	ts.as(t, annKey, "POST", "/agentik/conversations/"+imported+"/send", sendBody("what is the secret?"), 200)
	waitIdle(t, ts, imported)
	reqs := ts.Fake.Requests()
	read := false
	for _, r := range reqs[before:] {
		for _, m := range r.Messages {
			read = read || (m.Role == "user" && strings.Contains(m.Content, "OCHRE-5"))
		}
	}
	if !read {
		t.Errorf("the imported conversation's next turn did not give the model the document")
	}
	var page struct{ Messages []agent.Message }
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "GET", "/agentik/conversations/"+imported+"/messages", "", 200)), &page); err != nil {
		t.Fatal(err)
	}
	if got := page.Messages[0].Content; len(got) != 2 || got[1].FileID != annFile || got[1].Name != "note.md" {
		t.Errorf("the imported message's content: %+v", got)
	}

	// Bob's import of the reference: refused, nothing written.
	count := func(key, path string) int {
		var l struct {
			Conversations []agent.Conversation
			Files         []agent.File
		}
		if err := json.Unmarshal([]byte(ts.as(t, key, "GET", path, "", 200)), &l); err != nil {
			t.Fatal(err)
		}
		return len(l.Conversations) + len(l.Files)
	}
	body := ts.as(t, bobKey, "POST", "/agentik/import", export, 400)
	if !strings.Contains(body, "bad_request") || !strings.Contains(body, "with its bytes") {
		t.Errorf("bob's import of ann's file: %s", body)
	}
	if n := count(bobKey, "/agentik/conversations"); n != 0 {
		t.Errorf("bob has %d conversations after a refused import", n)
	}

	// With the bytes: the file is Bob's. Joined to a conversation that
	// references Ann's file, the whole import fails and leaves no file.
	withBytes := strings.Replace(export, `"file_id":"`+annFile+`"`, `"data":"`+b64("# Note\n\nBob's copy: OCHRE-5.")+`"`, 1)
	var doc agent.Archive
	if err := json.Unmarshal([]byte(withBytes), &doc); err != nil {
		t.Fatal(err)
	}
	var ref agent.Archive
	if err := json.Unmarshal([]byte(export), &ref); err != nil {
		t.Fatal(err)
	}
	ref.Conversations[0].Conversation.ID = "other"
	both := doc
	both.Conversations = append(slices.Clone(doc.Conversations), ref.Conversations[0])
	bothJSON, _ := json.Marshal(both)
	ts.as(t, bobKey, "POST", "/agentik/import", string(bothJSON), 400)
	if n := count(bobKey, "/agentik/files"); n != 0 {
		t.Errorf("bob has %d files after a refused import", n)
	}
	if err := json.Unmarshal([]byte(ts.as(t, bobKey, "POST", "/agentik/import", withBytes, 201)), &res); err != nil || len(res.Conversations) != 1 {
		t.Fatalf("bob's import with the bytes: %+v %v", res, err)
	}
	var bobFiles struct{ Files []agent.File }
	if err := json.Unmarshal([]byte(ts.as(t, bobKey, "GET", "/agentik/files", "", 200)), &bobFiles); err != nil || len(bobFiles.Files) != 1 {
		t.Fatalf("bob's files: %+v %v", bobFiles, err)
	}
	if err := json.Unmarshal([]byte(ts.as(t, bobKey, "GET", "/agentik/conversations/"+res.Conversations[0].ID+"/messages", "", 200)), &page); err != nil {
		t.Fatal(err)
	}
	if got := page.Messages[0].Content; len(got) != 2 || got[1].FileID != bobFiles.Files[0].ID || got[1].Data != "" {
		t.Errorf("bob's imported message's content: %+v", got)
	}
}

// TestExportEmbedsFiles: ?files=embed writes each file part with its
// file's bytes, on both export routes, so a backup restores on a fresh
// server: imported there, the file is the importer's and downloads with
// the same bytes. Bob, a viewer of Ann's project, may export her
// conversation but not download her file: his export keeps the reference
// and never carries the bytes. The default stays the reference; a bad
// value, or embed with Markdown, is 400.
func TestExportEmbedsFiles(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	bob, bobKey := ts.member(t, admin, "bob")
	doc := "# Plan\n\nThe restored secret is UMBER-7, «ünïcode» \"quoted\" <b>.\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(doc))

	var p agent.Project
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/projects",
		`{"name":"Launch","members":[{"user_id":"`+bob+`","role":"viewer"}]}`, 201)), &p); err != nil {
		t.Fatal(err)
	}
	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/conversations", `{"project":"`+p.ID+`"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	ts.as(t, annKey, "POST", "/agentik/conversations/"+c.ID+"/send",
		`{"content":[{"type":"text","body":"read it"},{"type":"file","name":"plan.md","mime":"text/markdown","data":"`+b64+`"}]}`, 200)
	waitIdle(t, ts, c.ID)
	var annFiles struct{ Files []agent.File }
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "GET", "/agentik/files", "", 200)), &annFiles); err != nil || len(annFiles.Files) != 1 {
		t.Fatalf("ann's files: %+v %v", annFiles, err)
	}
	annFile := annFiles.Files[0].ID

	// filePart is the file part of an export's conversation c.
	filePart := func(export string) agent.Content {
		t.Helper()
		var a agent.Archive
		if err := json.Unmarshal([]byte(export), &a); err != nil {
			t.Fatalf("the export is not an Archive: %v", err)
		}
		for _, ac := range a.Conversations {
			if ac.Conversation.ID != c.ID {
				continue
			}
			for _, m := range ac.Messages {
				for _, part := range m.Content {
					if part.Type == agent.ContentFile {
						return part
					}
				}
			}
		}
		t.Fatalf("no file part in the export of %s", c.ID)
		return agent.Content{}
	}
	if got := filePart(ts.as(t, annKey, "GET", "/agentik/conversations/"+c.ID+"/export", "", 200)); got.FileID != annFile || got.Data != "" {
		t.Errorf("the default export's file part: %+v", got)
	}
	embedded := ts.as(t, annKey, "GET", "/agentik/conversations/"+c.ID+"/export?files=embed", "", 200)
	for route, export := range map[string]string{"one": embedded, "all": ts.as(t, annKey, "GET", "/agentik/export?files=embed", "", 200)} {
		if got := filePart(export); got.Data != b64 || got.FileID != "" || got.Name != "plan.md" || got.Mime != "text/markdown" {
			t.Errorf("%s: the embedded file part: %+v", route, got)
		}
	}

	// A fresh server restores the file from the export alone.
	fresh := newTestServer(t)
	var res agent.ImportResult
	fresh.call(t, "POST", "/agentik/import", embedded, 201, &res)
	if len(res.Conversations) != 1 {
		t.Fatalf("the import on a fresh server: %+v", res)
	}
	var page struct{ Messages []agent.Message }
	fresh.call(t, "GET", "/agentik/conversations/"+res.Conversations[0].ID+"/messages", "", 200, &page)
	var restored string
	for _, part := range page.Messages[0].Content {
		if part.Type == agent.ContentFile {
			restored = part.FileID
		}
	}
	resp := fresh.do(t, "GET", "/agentik/files/"+restored+"/content", "")
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != doc || restored == "" {
		t.Errorf("the restored file %q: %d %q, want %q", restored, resp.StatusCode, got, doc)
	}

	// Bob reads the conversation, not the file: never embedded.
	ts.as(t, bobKey, "GET", "/agentik/files/"+annFile+"/content", "", 404)
	for _, path := range []string{"/agentik/conversations/" + c.ID + "/export?files=embed", "/agentik/export?files=embed"} {
		export := ts.as(t, bobKey, "GET", path, "", 200)
		if got := filePart(export); got.FileID != annFile || got.Data != "" || strings.Contains(export, b64) {
			t.Errorf("bob's %s: the file part %+v", path, got)
		}
	}

	for _, bad := range []string{"/agentik/conversations/" + c.ID + "/export?files=all", "/agentik/conversations/" + c.ID + "/export?format=markdown&files=embed", "/agentik/export?files=bytes"} {
		if body := ts.as(t, annKey, "GET", bad, "", 400); !strings.Contains(body, "files") {
			t.Errorf("%s: %s", bad, body)
		}
	}
}

// TestA2AFileURL: an A2A file part whose url names a file of agentik's
// (agentik:file/<id>, as task history names attached files) attaches the
// sender's file: the model reads it. Another member's file id is
// not_found, and nothing is stored.
func TestA2AFileURL(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	_, bobKey := ts.member(t, admin, "bob")
	var f agent.File
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/files",
		`{"name":"plan.md","media_type":"text/markdown","data":"`+base64.StdEncoding.EncodeToString([]byte("# Plan\n\nThe A2A-linked secret is CORAL-6."))+`"}`, 201)), &f); err != nil {
		t.Fatal(err)
	}
	send := func(key string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-` + key[len(key)-6:] + `","role":"ROLE_USER","parts":[{"text":"read the plan"},{"url":"agentik:file/` + f.ID + `","filename":"plan.md","mediaType":"text/markdown"}]}}}`
		return ts.as(t, key, "POST", "/a2a/agentik", body, 200)
	}
	if got := send(annKey); !strings.Contains(got, "CORAL-6") {
		t.Errorf("ann's A2A message with her file's url: %s", got)
	}
	got := send(bobKey)
	if !strings.Contains(got, `"error"`) || !strings.Contains(got, "not found") || strings.Contains(got, "CORAL-6") {
		t.Errorf("bob's A2A message with ann's file's url: %s", got)
	}
	var bobs struct{ Files []agent.File }
	if err := json.Unmarshal([]byte(ts.as(t, bobKey, "GET", "/agentik/files", "", 200)), &bobs); err != nil || len(bobs.Files) != 0 {
		t.Errorf("bob's files: %+v %v", bobs.Files, err)
	}
}
