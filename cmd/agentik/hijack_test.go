package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefusedClientChosenIDChangesNothing: bob names ann's conversation as
// his chat id with the AI SDK's own transport and as his thread id with
// AG-UI's own client. Both are refused as not_found, and nothing changes:
// ann's later turn is hers on every replay, none of it reaches bob's, and
// so it stays after a restart (issue 46, item 1: before, the refused create
// left bob the owner of every later event of ann's conversation).
func TestRefusedClientChosenIDChangesNothing(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "a.db")
	tm := startTeam(t, db)
	victim := tm.converse(t, tm.ann.key, "first words")
	waitEnd(t, tm.ann.key, tm.p.url("/agentik/conversations/"+victim+"/events"))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "hijack.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+tm.p.addr, "AGENTIK_KEY="+tm.bob.key, "AGENTIK_CHAT="+victim)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), tm.p.logs)
	}
	var got struct {
		AISDK string `json:"aisdk"`
		AGUI  struct {
			Types []string
			Error *struct{ Message, Code string }
		} `json:"agui"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if !strings.Contains(got.AISDK, "not_found") && !strings.Contains(got.AISDK, "not found") {
		t.Errorf("the AI SDK's send to ann's chat id: %q, want a not_found error", got.AISDK)
	}
	if got.AGUI.Error == nil || got.AGUI.Error.Code != "not_found" {
		t.Errorf("AG-UI run on ann's thread id: events %v, error %+v; want RUN_ERROR not_found", got.AGUI.Types, got.AGUI.Error)
	}

	// Ann goes on in her conversation. (With her events made bob's, this
	// send never saw its own message come back: bounded here.)
	req, err := http.NewRequestWithContext(ctx, "POST", tm.p.url("/agentik/conversations/"+victim+"/send"), strings.NewReader(`{"content":[{"type":"text","body":"second words"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tm.ann.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("ann's second send: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("ann's second send: %d", resp.StatusCode)
	}
	ends := 0
	for ev := range sse(t, ctx, tm.ann.key, tm.p.url("/agentik/conversations/"+victim+"/events"), "0") {
		if strings.HasPrefix(ev.data, `{"type":"end"`) {
			if ends++; ends == 2 {
				break
			}
		}
	}
	if ends != 2 {
		t.Fatalf("ann's second turn did not end; logs:\n%s", tm.p.logs)
	}

	check := func(when string) {
		t.Helper()
		for who, key := range map[string]string{"bob": tm.bob.key, "ann": tm.ann.key} {
			code, b := call(t, key, "GET", tm.p.url("/agentik/events/replay?limit=1000"), "")
			if code != 200 {
				t.Fatalf("%s: %s's replay: %d %s", when, who, code, b)
			}
			mine := strings.Count(string(b), victim)
			switch {
			case who == "bob" && mine != 0:
				t.Errorf("%s: bob's replay holds %d events of ann's conversation", when, mine)
			case who == "ann" && !strings.Contains(string(b), "second words"):
				t.Errorf("%s: ann's replay lacks her second turn", when)
			}
		}
		code, _ := call(t, tm.bob.key, "GET", tm.p.url("/agentik/conversations/"+victim), "")
		if code != 404 {
			t.Errorf("%s: bob reads ann's conversation: %d, want 404", when, code)
		}
	}
	check("live")
	_ = tm.p.cmd.Process.Kill()
	_ = tm.p.cmd.Wait()
	tm.p = start(t, tm.p.addr, db, tm.env...)
	check("after a restart")
}
