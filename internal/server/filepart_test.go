package server_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
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
