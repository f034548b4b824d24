package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/knowledge/knowledgetest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestFilePartsEveryClient: a document in a user message, through the
// real clients against the real binary (testdata/fileparts.mjs): the
// openai SDK's chat completion file part (file_data and file_id) and
// Responses input_file, the AI SDK's file UI part, an A2A file part.
// Each one's text reaches the model; the Responses input items keep the
// file; another member's file_id is 404, bad base64, an unreadable type
// and a file_url are 400, and none of them stores a file.
func TestFilePartsEveryClient(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	pdfPath := filepath.Join(t.TempDir(), "rules.pdf")
	if err := os.WriteFile(pdfPath, knowledgetest.PDF("Parking\nThe PDF secret is BLUE-42.", "Lunch\nLunch is at noon."), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "fileparts.mjs"), pdfPath)
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+tm.p.addr, "AGENTIK_KEY="+tm.ann.key, "OTHER_KEY="+tm.bob.key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), tm.p.logs)
	}
	var got struct {
		PDFID      string `json:"pdf_id"`
		RespStatus string `json:"resp_status"`
		RespItems  [][]struct {
			Type     string
			FileID   string `json:"file_id"`
			Filename string
		} `json:"resp_items"`
		Refused map[string]struct {
			Status  int
			Code    string
			Message string
		}
		FilesBefore int `json:"files_before"`
		FilesAfter  int `json:"files_after"`
		A2AHistory  []struct {
			Case, Filename, MediaType string
		} `json:"a2a_history"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	// Each client's document reached the model, as the user's message.
	for _, secret := range []string{"AMBER-17", "BLUE-42", "RESP-9", "JADE-3", "ONYX-5"} {
		testwait.For(t, "the model read "+secret, func() bool { return userRead(tm, secret) })
	}
	var memo *struct {
		Type     string
		FileID   string `json:"file_id"`
		Filename string
	}
	for _, it := range got.RespItems {
		for i := range it {
			if it[i].Type == "input_file" {
				memo = &it[i]
			}
		}
	}
	if got.RespStatus != "completed" || memo == nil || memo.Filename != "memo.md" || !strings.HasPrefix(memo.FileID, "file-") {
		t.Errorf("responses input items: %+v (status %s)", got.RespItems, got.RespStatus)
	}
	want := map[string]struct {
		status int
		text   string
	}{
		"chat_other_file": {404, "not found"},
		"resp_other_file": {404, "not found"},
		"bad_base64":      {400, "base64"},
		"unsupported":     {400, "song.mp3"},
		"file_url":        {400, "file_url"},
	}
	for name, w := range want {
		r := got.Refused[name]
		if r.Status != w.status || !strings.Contains(r.Message, w.text) {
			t.Errorf("%s: %+v, want %d with %q", name, r, w.status, w.text)
		}
	}
	if got.FilesAfter != got.FilesBefore {
		t.Errorf("refused requests stored files: %d before, %d after", got.FilesBefore, got.FilesAfter)
	}
	var a2aFile bool
	for _, p := range got.A2AHistory {
		a2aFile = a2aFile || (p.Filename == "a2a.txt" && p.Case == "url")
	}
	if len(got.A2AHistory) > 0 && !a2aFile {
		t.Errorf("A2A history has no file part: %+v", got.A2AHistory)
	}
	// Bob's own files: none of ann's.
	var bobs struct{ Files []struct{ ID string } }
	must(t, tm.bob.key, "GET", tm.p.url("/agentik/files"), "", &bobs)
	if len(bobs.Files) != 0 {
		t.Errorf("bob has files: %+v", bobs.Files)
	}
}

// userRead reports whether a user message the model was given holds text.
func userRead(tm *team, text string) bool {
	for _, r := range tm.fake.Requests() {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, text) {
				return true
			}
		}
	}
	return false
}
