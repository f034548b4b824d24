package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

type authKey struct{}

// echoAuthMCP is a streamable HTTP MCP server whose tool whoami answers
// the Authorization header its call came with; a request with "Bearer
// revoked" is refused with 401, as a server does with a revoked token.
func echoAuthMCP(t *testing.T) *httptest.Server {
	s := server.NewMCPServer("echo-auth", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, _ := ctx.Value(authKey{}).(string)
		return mcp.NewToolResultText("auth=" + a), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, authKey{}, r.Header.Get("Authorization"))
	}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer revoked" {
			http.Error(w, "token revoked", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestPerUserCredentials: on the real binary, an mcp.json entry with
// "auth": "per_user" runs each call with the conversation owner's own
// secret. ann's call carries ann's token and bob's bob's; bob, without
// one, gets a credential item in his inbox (not ann's) on an A2A-started
// turn, which waits and finishes with his token once he PUTs it; a
// stored secret the server refuses (401) becomes the same item; a
// schedule's run waits the same way. The secret is never listed back,
// and each user lists only their own.
func TestPerUserCredentials(t *testing.T) {
	t.Parallel()
	ts := echoAuthMCP(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcp.json")
	entry := `{"mcpServers":{"gh":{"url":"` + ts.URL + `/mcp","auth":"per_user","headers":{"Authorization":"Bearer ${user.secret}"}}}}`
	if err := os.WriteFile(conf, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTeam(t, filepath.Join(dir, "agentik.db"), "AGENTIK_MCP_CONFIG="+conf, "AGENTIK_SECRET_KEY=a-secret-key-of-the-test")
	p, ann, bob := tm.p, tm.ann.key, tm.bob.key
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + ann})

	toolResult := func(key, convID string) string {
		t.Helper()
		var res string
		testwait.For(t, "the tool result of "+convID, func() bool {
			var hist struct{ Messages []agent.Message }
			must(t, key, "GET", p.url("/agentik/conversations/"+convID+"/messages"), "", &hist)
			for _, m := range hist.Messages {
				if m.Type == agent.MessageToolResult {
					res = m.Result
					return true
				}
			}
			return false
		})
		return res
	}
	// a2a starts a turn as key that calls the tool, and returns its
	// conversation, which waits: the task is auth-required.
	a2a := func(key, id string) string {
		t.Helper()
		rpc := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"[[tool=gh__whoami]]"}]}}}`
		var sent struct {
			Result struct {
				Task struct {
					ContextID string
					Status    struct{ State string }
				}
			}
		}
		must(t, key, "POST", p.url("/a2a/agentik"), rpc, &sent)
		if sent.Result.Task.ContextID == "" || sent.Result.Task.Status.State != "TASK_STATE_AUTH_REQUIRED" {
			t.Fatalf("A2A send: %+v", sent)
		}
		return sent.Result.Task.ContextID
	}
	// credentialItem waits for key's one pending credential item of conv.
	credentialItem := func(key, conv string) agent.InboxItem {
		t.Helper()
		var item agent.InboxItem
		testwait.For(t, "a credential item of "+conv, func() bool {
			for _, it := range inboxItems(t, p, key, "pending") {
				if it.ConversationID == conv {
					item = it
					return true
				}
			}
			return false
		})
		if item.Kind != agent.InboxCredential || item.Detail.Server != "gh" || item.Detail.URL != "/agentik/credentials/gh" ||
			item.ID != agent.InboxID(agent.InboxCredential, conv, item.Detail.RequestID) {
			t.Fatalf("credential item %+v", item)
		}
		return item
	}
	ended := func(key, conv string) {
		t.Helper()
		testwait.For(t, "the turn of "+conv+" to end", func() bool {
			var c agent.Conversation
			must(t, key, "GET", p.url("/agentik/conversations/"+conv), "", &c)
			return !c.Running
		})
	}

	// ann stores her secret; her call carries it.
	must(t, ann, "PUT", p.url("/agentik/credentials/gh"), `{"secret":"ann-token"}`, nil)
	annConv := tm.converse(t, ann, "[[tool=gh__whoami]]")
	if got := toolResult(ann, annConv); got != "auth=Bearer ann-token" {
		t.Fatalf("ann's call: %q", got)
	}

	// bob has none: his A2A turn waits on a credential item of his inbox.
	bobConv := a2a(bob, "b1")
	item := credentialItem(bob, bobConv)
	if !strings.Contains(item.Title, `"gh"`) {
		t.Errorf("item title %q", item.Title)
	}
	for _, it := range inboxItems(t, p, ann, "pending") {
		t.Fatalf("ann's inbox shows %+v", it)
	}
	var list struct {
		Credentials []struct{ Server, Kind string }
	}
	must(t, bob, "GET", p.url("/agentik/credentials"), "", &list)
	if len(list.Credentials) != 0 {
		t.Fatalf("bob's credentials before: %+v", list)
	}
	// Bad input: a typed error, nothing stored.
	if code, b := call(t, bob, "PUT", p.url("/agentik/credentials/gh"), `{"secret":""}`); code != http.StatusBadRequest || !strings.Contains(string(b), `"bad_request"`) {
		t.Fatalf("an empty secret: %d %s", code, b)
	}
	if code, b := call(t, bob, "PUT", p.url("/agentik/credentials/nope"), `{"secret":"x"}`); code != http.StatusNotFound {
		t.Fatalf("an unknown server: %d %s", code, b)
	}
	must(t, bob, "PUT", p.url("/agentik/credentials/gh"), `{"secret":"bob-token"}`, nil)
	if got := toolResult(bob, bobConv); got != "auth=Bearer bob-token" {
		t.Fatalf("bob's call after he gave his secret: %q", got)
	}
	ended(bob, bobConv)
	if res := inboxItems(t, p, bob, "resolved"); len(res) != 1 || res[0].ID != item.ID || res[0].ResolvedBy != tm.bob.id {
		t.Fatalf("bob's resolved items %+v", res)
	}
	code, b := call(t, bob, "GET", p.url("/agentik/credentials"), "")
	if code != http.StatusOK || !strings.Contains(string(b), `"server":"gh"`) || strings.Contains(string(b), "bob-token") {
		t.Fatalf("bob's credentials: %d %s", code, b)
	}
	// ann's session still carries her own token.
	if got := toolResult(ann, tm.converse(t, ann, "[[tool=gh__whoami]]")); got != "auth=Bearer ann-token" {
		t.Fatalf("ann's second call: %q", got)
	}

	// A stored secret the server refuses: the same item, then the call
	// goes on with the new one.
	must(t, ann, "PUT", p.url("/agentik/credentials/gh"), `{"secret":"revoked"}`, nil)
	annConv2 := a2a(ann, "a2")
	it := credentialItem(ann, annConv2)
	if !strings.Contains(it.Title, "refused") {
		t.Errorf("the refused secret's item %q", it.Title)
	}
	must(t, ann, "PUT", p.url("/agentik/credentials/gh"), `{"secret":"ann-new"}`, nil)
	if got := toolResult(ann, annConv2); got != "auth=Bearer ann-new" {
		t.Fatalf("ann's call after the 401: %q", got)
	}
	ended(ann, annConv2)

	// A schedule's run of bob's, once he removed his secret.
	must(t, bob, "DELETE", p.url("/agentik/credentials/gh"), "", nil)
	var sc agent.Schedule
	rule := fmt.Sprintf("FREQ=MINUTELY;BYSECOND=%d;COUNT=1", (time.Now().Second()+2)%60)
	must(t, bob, "POST", p.url("/agentik/schedules"), `{"prompt":"[[tool=gh__whoami]]","rrule":"`+rule+`"}`, &sc)
	var schedConv string
	testwait.For(t, "the scheduled run's credential item", func() bool {
		for _, it := range inboxItems(t, p, bob, "pending") {
			schedConv = it.ConversationID
			return true
		}
		return false
	})
	credentialItem(bob, schedConv)
	must(t, bob, "PUT", p.url("/agentik/credentials/gh"), `{"secret":"bob-2"}`, nil)
	if got := toolResult(bob, schedConv); got != "auth=Bearer bob-2" {
		t.Fatalf("the scheduled call: %q", got)
	}
	ended(bob, schedConv)
}

// TestPerUserNeedsSecretKey: a per_user entry without AGENTIK_SECRET_KEY
// stops the start with a message naming it.
func TestPerUserNeedsSecretKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcp.json")
	entry := `{"mcpServers":{"gh":{"url":"http://127.0.0.1:1/mcp","auth":"per_user","headers":{"Authorization":"Bearer ${user.secret}"}}}}`
	if err := os.WriteFile(conf, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		return map[string]string{"AGENTIK_MCP_CONFIG": conf, "AGENTIK_DB": "sqlite:" + filepath.Join(dir, "a.db"), "OPENAI_API_KEY": "x"}[k]
	}
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0"}, getenv, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "AGENTIK_SECRET_KEY") || !strings.Contains(err.Error(), `"gh"`) {
		t.Fatalf("err %v, want one naming AGENTIK_SECRET_KEY and the server", err)
	}
}
