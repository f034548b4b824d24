package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/demo"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestDemoMode runs the binary with AGENTIK_DEMO=1 and no model settings:
// a send is answered with reasoning, text and a round of the built-in
// tool, the final answer has a list, a code block and a table, and the
// page and the log say it is a demo.
func TestDemoMode(t *testing.T) {
	t.Parallel()
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "AGENTIK_DEMO=1")
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json",
		strings.NewReader(`{"content":[{"type":"text","body":"show me the whole UI"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	seen := map[string]int{}
	var text, result strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		seen[ev.Type]++
		switch ev.Type {
		case agent.EventAppendText:
			text.WriteString(ev.Text)
		case agent.EventToolResult:
			if ev.IsError {
				t.Errorf("tool error: %s", ev.Result)
			}
			result.WriteString(ev.Result)
		}
	}
	for _, typ := range []string{agent.EventStartReasoning, agent.EventStartResponse, agent.EventToolCall, agent.EventToolResult, agent.EventEnd} {
		if seen[typ] == 0 {
			t.Errorf("no %s event in\n%s", typ, body)
		}
	}
	if seen[agent.EventError] > 0 {
		t.Errorf("error events in\n%s", body)
	}
	if got := result.String(); got != "your message has 5 words" {
		t.Errorf("tool result %q", got)
	}
	for _, want := range []string{"\n- send another message", "```sh\n", "| --- | --- |", "your message has 5 words"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("answer lacks %q:\n%s", want, text.String())
		}
	}

	resp, err = http.Get(p.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `data-testid="model-notice"`) || !strings.Contains(string(page), "Demo model") {
		t.Errorf("the page does not say it is a demo")
	}
	var tools struct{ Servers []agent.ToolServer }
	getJSON(t, p.url("/agentik/tools"), &tools)
	if len(tools.Servers) != 1 || tools.Servers[0].Tools[0] != demo.ToolName {
		t.Errorf("tools %+v, want the demo tool", tools)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // the log is read once the process is done writing it
	_ = p.cmd.Wait()
	if !strings.Contains(p.logs.String(), "demo_model") {
		t.Errorf("the log does not say it is a demo:\n%s", p.logs)
	}
}

// TestModelProbeAtStart: a key the endpoint refuses is logged at start (the
// key redacted) and shown in the page's banner area.
func TestModelProbeAtStart(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t, llmtest.WithAPIKey("sk-the-right-key-1234"))
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"),
		"OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake-model", "OPENAI_API_KEY=sk-a-wrong-key-5678")
	var page []byte
	testwait.For(t, "the page to show the probe's finding", func() bool { // the probe runs in the background
		resp, err := http.Get(p.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		page, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(page), `data-testid="model-notice"`)
	})
	if !strings.Contains(string(page), "refused the API key") {
		t.Errorf("the page does not show the probe's finding")
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
	logs := p.logs.String()
	if !strings.Contains(logs, "model_endpoint_problem") || !strings.Contains(logs, "OPENAI_API_KEY") {
		t.Errorf("the log does not report the refused key:\n%s", logs)
	}
	if strings.Contains(logs, "sk-a-wrong-key-5678") || strings.Contains(string(page), "sk-a-wrong-key-5678") {
		t.Errorf("the key leaked")
	}
}

func TestDemoSetting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		env  string
		want bool
	}{{nil, "", false}, {[]string{"--demo"}, "", true}, {nil, "1", true}, {nil, "true", true}, {nil, "0", false}, {[]string{"--demo=false"}, "1", false}} {
		getenv := func(k string) string {
			if k == "AGENTIK_DEMO" {
				return tt.env
			}
			return ""
		}
		c, err := parseConfig(tt.args, getenv, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Demo != tt.want {
			t.Errorf("args %v AGENTIK_DEMO=%q: Demo = %v, want %v", tt.args, tt.env, c.Demo, tt.want)
		}
	}
}

// TestModelDetectFailureShown: an endpoint that cannot be asked for a model
// (no OPENAI_MODEL, /models answers 404) starts without a model, and the
// page says why beside the no-model banner, the password redacted.
func TestModelDetectFailureShown(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	base := strings.Replace(ts.URL, "http://", "http://user:hunter22@", 1) + "/v1"
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+base)
	resp, err := http.Get(p.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`data-testid="no-model-banner"`, `data-testid="model-notice"`, "OPENAI_MODEL is not set", "404"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "hunter22") {
		t.Errorf("the page shows the password")
	}
}
