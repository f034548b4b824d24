package main

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

func TestImportSaysWhatItDid(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL)
	sample := filepath.Join("..", "..", "internal", "server", "testdata", "chatgpt-conversations.json")
	// The export ZIP as ChatGPT sends it, then its conversations.json.
	doc, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range map[string]string{"chat.html": "<html></html>", "conversations.json": string(doc)} {
		f, _ := zw.Create(name)
		_, _ = f.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(t.TempDir(), "chatgpt-export.zip")
	if err := os.WriteFile(export, zbuf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{{export, "2 imported, 0 skipped"}, {sample, "0 imported, 2 skipped"}} {
		file, want := c.file, c.want
		var out, errOut bytes.Buffer
		if err := run(t.Context(), []string{"import", file}, chatEnv(addr), nil, &out, &errOut); err != nil {
			t.Fatalf("import: %v\n%s", err, errOut.String())
		}
		if !strings.Contains(out.String(), want+" (imported before)\n") {
			t.Errorf("import said %q, want %q", out.String(), want)
		}
	}
	// A refused file is said in words, not as the server's JSON.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("[{\"id\": nope}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = run(t.Context(), []string{"import", bad}, chatEnv(addr), nil, &out, &errOut)
	if want := "import: the server answered 400 Bad Request: not a ChatGPT conversations.json: line 1, column 10: expected the word null"; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), `"code"`) {
		t.Errorf("a bad file: %v, want %q…", err, want)
	}
}

// TestExportImportCommands: agentik import of the ChatGPT sample, then
// agentik export of the whole database and of one conversation, then
// agentik import of the backup into another server.
func TestExportImportCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := start(t, freeAddr(t), filepath.Join(dir, "a.db"))
	var out, errOut bytes.Buffer
	sample := filepath.Join("..", "..", "internal", "server", "testdata", "chatgpt-conversations.json")
	if err := run(t.Context(), []string{"import", "--json", sample}, chatEnv(a.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("import: %v %s", err, errOut.String())
	}
	var res agent.ImportResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Conversations) != 2 {
		t.Fatalf("import answer = %v %s", err, out.String())
	}

	backup := filepath.Join(dir, "backup.json")
	if err := run(t.Context(), []string{"export", "--out", backup}, chatEnv(a.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("export: %v", err)
	}
	out.Reset()
	if err := run(t.Context(), []string{"export", "--format", "markdown", res.Conversations[1].ID}, chatEnv(a.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("export ID: %v", err)
	}
	if !strings.Contains(out.String(), "# Haiku about autumn") || !strings.Contains(out.String(), "Crimson letters fall") {
		t.Errorf("markdown export:\n%s", out.String())
	}
	if err := run(t.Context(), []string{"export", "nope"}, chatEnv(a.addr), nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("export of an unknown id: %v", err)
	}

	b := start(t, freeAddr(t), filepath.Join(dir, "b.db"))
	out.Reset()
	if err := run(t.Context(), []string{"import", "--json", backup}, chatEnv(b.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("import backup: %v", err)
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Conversations) != 2 {
		t.Fatalf("import backup answer = %v %s", err, out.String())
	}
	if _, err := os.Stat(backup); err != nil {
		t.Fatal(err)
	}
}

// TestExportFilesCommand: agentik export --files of a conversation with
// an attached file imports into a fresh server with the file, the same
// bytes downloaded there; the backup without --files names a file the
// fresh server does not have, and its import is refused saying so.
func TestExportFilesCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := start(t, freeAddr(t), filepath.Join(dir, "a.db"))
	doc := "# Handbook\n\nThe backed-up secret is SIENNA-2, «ünïcode».\n"
	var res agent.ImportResult
	postJSON(t, a.url("/agentik/import"), `{"format":"agentik","version":1,"conversations":[{"conversation":{"id":"src","title":"with a file"},"messages":[`+
		`{"type":"user_message","id":"m1","content":[{"type":"text","body":"read it"},{"type":"file","name":"handbook.md","mime":"text/markdown","data":"`+
		base64.StdEncoding.EncodeToString([]byte(doc))+`"}]}]}]}`, &res)

	withFiles, reference := filepath.Join(dir, "with-files.json"), filepath.Join(dir, "reference.json")
	var out, errOut bytes.Buffer
	for _, args := range [][]string{{"export", "--files", "--out", withFiles}, {"export", "--out", reference}} {
		if err := run(t.Context(), args, chatEnv(a.addr), nil, &out, &errOut); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	out.Reset()
	if err := run(t.Context(), []string{"export", "--files", res.Conversations[0].ID}, chatEnv(a.addr), nil, &out, &errOut); err != nil || !strings.Contains(out.String(), `"data":"`) {
		t.Errorf("export --files ID: %v %.300s", err, out.String())
	}
	if err := run(t.Context(), []string{"export", "--files", "--format", "markdown", res.Conversations[0].ID}, chatEnv(a.addr), nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--files") {
		t.Errorf("export --files --format markdown: %v", err)
	}

	b := start(t, freeAddr(t), filepath.Join(dir, "b.db"))
	if err := run(t.Context(), []string{"import", reference}, chatEnv(b.addr), nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "with its bytes") {
		t.Errorf("import of the backup without --files on a fresh server: %v", err)
	}
	out.Reset()
	if err := run(t.Context(), []string{"import", "--json", withFiles}, chatEnv(b.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("import of the backup with --files: %v", err)
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Conversations) != 1 {
		t.Fatalf("import answer = %v %s", err, out.String())
	}
	var page struct{ Messages []agent.Message }
	must(t, "", "GET", b.url("/agentik/conversations/"+res.Conversations[0].ID+"/messages"), "", &page)
	id := ""
	for _, p := range page.Messages[0].Content {
		if p.Type == agent.ContentFile {
			id = p.FileID
		}
	}
	code, got := call(t, "", "GET", b.url("/agentik/files/"+id+"/content"), "")
	if code != 200 || string(got) != doc {
		t.Errorf("the restored file %q: %d %q, want %q", id, code, got, doc)
	}
}

// TestImportParts: a file over the server's limits is split between
// conversations, each part within them; a small or unreadable one is sent
// as it is.
func TestImportParts(t *testing.T) {
	t.Parallel()
	msg := `{"type":"user_message","content":[{"type":"text","body":"hi"}]}`
	conv := func(id string, n int) string {
		return `{"conversation":{"id":"` + id + `"},"messages":[` + strings.TrimSuffix(strings.Repeat(msg+",", n), ",") + `]}`
	}
	big := `{"format":"agentik","version":1,"conversations":[` + conv("a", 6000) + "," + conv("b", 6000) + "," + conv("c", 10) + `]}`
	parts, err := importParts([]byte(big))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range parts {
		var a agent.Archive
		if err := json.Unmarshal(p, &a); err != nil || a.Format != "agentik" || a.Version != 1 {
			t.Fatalf("part %.80s: %v", p, err)
		}
		ids := ""
		n := 0
		for _, c := range a.Conversations {
			ids += c.Conversation.ID
			n += len(c.Messages)
		}
		if n > agent.MaxImportMessages {
			t.Errorf("part %s has %d messages", ids, n)
		}
		got = append(got, ids)
	}
	if strings.Join(got, ",") != "a,bc" {
		t.Errorf("parts = %v, want a,bc", got)
	}
	for _, small := range []string{`[{"id":"x","mapping":{}}]`, `{"format":"agentik","version":1,"conversations":[]}`, `not json`} {
		parts, err := importParts([]byte(small))
		if err != nil || len(parts) != 1 || string(parts[0]) != small && small != `{"format":"agentik","version":1,"conversations":[]}` {
			t.Errorf("importParts(%s) = %q, %v", small, parts, err)
		}
	}
}

// TestExportOfOneBigConversationImports: what agentik export writes,
// agentik import reads back, however big one conversation grew: 18
// messages of 1 MiB (added as Conversations API items: no model call)
// make an export above the 16 MiB body limit of other requests (the
// import route has its own, AGENTIK_MAX_IMPORT_BYTES).
func TestExportOfOneBigConversationImports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := start(t, freeAddr(t), filepath.Join(dir, "a.db"))
	var c agent.Conversation
	postJSON(t, a.url("/agentik/conversations"), `{}`, &c)
	const per, parts = 9, 2
	text := strings.Repeat("x", agent.MaxTextBytes-16)
	for i := range parts {
		var items []string
		for j := range per {
			items = append(items, `{"type":"message","role":"user","content":"`+fmt.Sprint(i, j)+text+`"}`)
		}
		postJSON(t, a.url("/v1/conversations/"+c.ID+"/items"), `{"items":[`+strings.Join(items, ",")+`]}`, nil)
	}
	backup := filepath.Join(dir, "backup.json")
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"export", "--out", backup}, chatEnv(a.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("export: %v", err)
	}
	st, err := os.Stat(backup)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() <= protocol.MaxBodyBytes {
		t.Fatalf("the export is %d bytes: not above the %d of a request body", st.Size(), protocol.MaxBodyBytes)
	}
	t.Logf("export of one conversation: %d bytes", st.Size())

	b := start(t, freeAddr(t), filepath.Join(dir, "b.db"))
	out.Reset()
	if err := run(t.Context(), []string{"import", "--json", backup}, chatEnv(b.addr), nil, &out, &errOut); err != nil {
		t.Fatalf("import of the export: %v", err)
	}
	var res agent.ImportResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Conversations) != 1 {
		t.Fatalf("import answer = %v %.300s", err, out.String())
	}
	if got := res.Conversations[0].MessageCount; got != per*parts {
		t.Errorf("imported %d messages, want %d", got, per*parts)
	}
}
