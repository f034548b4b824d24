package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestReadyAndSlowToolServer runs the binary with a stdio tool server that
// is held in its first start: /ready answers 503 naming it, a message sent
// at once waits for it and still gets its tool, and /ready turns 200.
func TestReadyAndSlowToolServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcpBin := filepath.Join(dir, "mcpserver")
	if out, err := exec.Command("go", "build", "-o", mcpBin, "../../internal/tool/testdata/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcpserver: %v\n%s", err, out)
	}
	gate := filepath.Join(dir, "gate")
	conf := `{"mcpServers":{"slow":{"command":"` + mcpBin + `","env":{"MCPSERVER_START_GATE":"` + gate + `"}}}}`
	mcp := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"),
		"OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake-model", "AGENTIK_MCP_CONFIG="+mcp)

	resp, err := http.Get(p.url("/ready"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), `"tools_starting":["slow"]`) {
		t.Fatalf("/ready while starting: %d %s", resp.StatusCode, b)
	}

	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		body := `{"content":[{"type":"text","body":"[[tool=slow__echo args={\"text\":\"hi\"}]]"}]}`
		resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(body))
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{string(b), err}
	}()
	// The send is in: the turn has started (and waits for the tools).
	testwait.For(t, "the turn to start", func() bool {
		var got agent.Conversation
		getJSON(t, p.url("/agentik/conversations/"+c.ID), &got)
		return got.Running
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the send did not end; logs:\n%s", p.logs)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.body, `"type":"tool_result"`) || !strings.Contains(r.body, "tool said: hi") {
		t.Fatalf("the turn did not get the tool:\n%s\nlogs:\n%s", r.body, p.logs)
	}
	offered := false
	for _, tl := range fake.Requests()[0].Tools {
		offered = offered || tl.Name == "slow__echo"
	}
	if !offered {
		t.Errorf("slow__echo not offered in the first request: %+v", fake.Requests()[0].Tools)
	}
	var ready map[string]any
	getJSON(t, p.url("/ready"), &ready)
	if ready["status"] != "ready" {
		t.Errorf("/ready after the start: %v", ready)
	}
}
