package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/agentik/agentik/internal/webhook"
)

// TestInboxWebhooks: on the real binary with AGENTIK_WEBHOOKS pointing at
// a loopback receiver, an approval a member's turn waits for is delivered
// as inbox.item_created (the item's id, its owner, the tool), answering it
// from the inbox as inbox.item_resolved (the decision), and an item whose
// turn is interrupted unanswered as inbox.item_resolved "turn_ended", each
// with a valid Standard Webhooks signature, in the log's order around the
// turns' turn.ended.
func TestInboxWebhooks(t *testing.T) {
	t.Parallel()
	secret, err := webhook.ParseSecret(a2aSecret)
	if err != nil {
		t.Fatal(err)
	}
	type hook struct {
		id   string
		typ  string
		item webhook.InboxItem
	}
	hooks := make(chan hook, 32)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if r.Header.Get("webhook-signature") != webhook.Sign(secret, r.Header.Get("webhook-id"), ts, body) {
			t.Errorf("webhook with a bad signature: %s", body)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var m webhook.InboxMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("webhook body %s: %v", body, err)
		}
		hooks <- hook{id: r.Header.Get("webhook-id"), typ: m.Type, item: m.Data}
	}))
	defer recv.Close()
	entry := filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s is missing: run `npm ci`: %v", entry, err)
	}
	dir := t.TempDir()
	mcpConf := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpConf, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"],"requireApproval":{"always":["echo"]}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTeam(t, filepath.Join(dir, "agentik.db"), "AGENTIK_MCP_CONFIG="+mcpConf, "AGENTIK_WEBHOOKS="+recv.URL, "AGENTIK_WEBHOOK_SECRET="+a2aSecret)
	p, ann := tm.p, tm.ann.key
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + ann})

	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	warm := map[string]bool{} // the warm-up turns, whose turn.ended may come late
	next := func(want string) hook {
		t.Helper()
		for {
			select {
			case h := <-hooks:
				if h.typ == webhook.EventTurnEnded && warm[h.item.ConversationID] {
					continue
				}
				if h.typ != want {
					t.Fatalf("webhook %s %+v, want %s", h.typ, h.item, want)
				}
				return h
			case <-ctx.Done():
				t.Fatalf("no %s webhook; logs:\n%s", want, p.logs)
			}
		}
	}
	// send starts a turn of ann's; its SSE stream is left to itself.
	send := func(text string) string {
		var c struct{ ID string }
		must(t, ann, "POST", p.url("/agentik/conversations"), `{}`, &c)
		body, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "body": text}}})
		req, _ := http.NewRequestWithContext(ctx, "POST", p.url("/agentik/conversations/"+c.ID+"/send"), strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+ann)
		req.Header.Set("Content-Type", "application/json")
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		return c.ID
	}

	// The deliverer follows the log (a receiver starts at its head).
	testwait.For(t, "a warm-up turn's turn.ended", func() bool {
		warm[send("warm up")] = true
		select {
		case h := <-hooks:
			return h.typ == webhook.EventTurnEnded
		case <-time.After(time.Second):
			return false
		}
	})

	// An approval, answered from the inbox.
	conv := send(`[[tool=everything__echo args={"message":"page me"}]]`)
	created := next(webhook.EventInboxItemCreated).item
	if created.ConversationID != conv || created.Kind != agent.InboxApproval || created.Owner != tm.ann.id || created.Name != "everything__echo" ||
		created.ItemID != agent.InboxID(agent.InboxApproval, conv, created.CallID) || created.CallID == "" {
		t.Fatalf("inbox.item_created %+v", created)
	}
	must(t, ann, "POST", p.url("/agentik/inbox/"+created.ItemID), `{"decision":"approve"}`, nil)
	resolved := next(webhook.EventInboxItemResolved)
	if resolved.item.ItemID != created.ItemID || resolved.item.Resolution != agent.DecisionApprove || resolved.item.Owner != tm.ann.id {
		t.Errorf("inbox.item_resolved %+v", resolved.item)
	}
	next(webhook.EventTurnEnded)

	// An approval whose turn is interrupted unanswered.
	conv = send(`[[tool=everything__echo args={"message":"never mind"}]]`)
	created = next(webhook.EventInboxItemCreated).item
	must(t, ann, "POST", p.url("/agentik/conversations/"+conv+"/interrupt"), `{}`, nil)
	resolved = next(webhook.EventInboxItemResolved)
	if resolved.item.ItemID != created.ItemID || resolved.item.Resolution != "turn_ended" {
		t.Errorf("inbox.item_resolved of the interrupted turn %+v", resolved.item)
	}
	next(webhook.EventTurnEnded)
}
