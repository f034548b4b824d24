package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestRunServesAndStops: app.Run, the program cmd/agentik runs, serves on
// the listener it is given (as the bench's in-process server does) with
// the model the environment names, answers a send end to end, and
// returns nil once its context is cancelled, after a graceful stop.
func TestRunServesAndStops(t *testing.T) {
	fake, modelURL := llmtest.NewHTTPServer(t, llmtest.WithModels("fake-model"))
	fake.Enqueue(llmtest.Reply{Text: "hello from the fake"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_BASE_URL": modelURL, "OPENAI_MODEL": "fake-model"}
	s := app.Settings{Addr: ln.Addr().String(), DB: "sqlite:" + filepath.Join(t.TempDir(), "a.db"), Titles: "first_line", Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, s, func(k string) string { return env[k] }, &logs) }()

	base := "http://" + ln.Addr().String()
	// The listener is open before Run: this waits in its backlog until
	// the server serves.
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || health.Model != "fake-model" {
		t.Fatalf("/health: %d, model %q", resp.StatusCode, health.Model)
	}
	resp, err = http.Post(base+"/agentik/conversations", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	resp, err = http.Post(base+"/agentik/conversations/"+c.ID+"/send", "application/json", strings.NewReader(`{"content":[{"type":"text","body":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sse, _ := io.ReadAll(resp.Body) // the turn's stream, until its end
	resp.Body.Close()
	if !strings.Contains(string(sse), "hello from the fake") {
		t.Fatalf("the send's stream lacks the answer:\n%s", sse)
	}

	// The metrics count the turn's committed events (Config.Committed).
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposition, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !appendedSome(string(exposition)) {
		t.Errorf("/metrics (%d) counts no appended event:\n%s", resp.StatusCode, exposition)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "shutting_down") {
		t.Errorf("no shutting_down in the log:\n%s", logs.String())
	}
}

// appendedSome reports whether an exposition counts appended events.
func appendedSome(exposition string) bool {
	for line := range strings.Lines(exposition) {
		if v, ok := strings.CutPrefix(line, "agentik_events_appended_total "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}
