package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// The admin panel (issue 51): changes made in /admin take effect on the
// next message without a restart; a member is refused; bad input is a
// typed error that changes nothing; the admin's sidebar holds her own
// chats only.

const adminKey = "k-admin"

// adminPanel opens /admin in tab and waits for its settings.
func adminPanel(t testing.TB, ts *testServer, tab context.Context) {
	t.Helper()
	do(t, tab, chromedp.Navigate(ts.URL+"/admin"))
	waitJS(t, tab, "the admin panel", `document.querySelector('[data-testid="admin"]')?.dataset.loaded === 'true'`)
}

// TestBrowserAdminProviderAnswersNextMessage: a provider added in the
// admin panel (a second fake model server) and made the default answers
// the next message, with no restart.
func TestBrowserAdminProviderAnswersNextMessage(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t, withKeys(adminKey))
	second, url := llmtest.NewHTTPServer(t, llmtest.WithModels("second-model"))
	second.Enqueue(llmtest.Reply{Text: "Answered by the second provider."})
	tab := signInTab(t, ts, adminKey)
	waitJS(t, tab, "the Admin link", `document.querySelector('[data-testid="nav-admin"]') !== null`)
	adminPanel(t, ts, tab)
	waitJS(t, tab, "the environment's provider, read-only", `document.querySelector('[data-testid="provider-row"][data-name="openai"]')?.dataset.source === 'env'`)

	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="provider-name"]`), "second"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="provider-url"]`), url),
		chromedp.SetValue(chromedp.CSS(`[data-testid="provider-models"]`), "second-model"),
		chromedp.Click(chromedp.CSS(`[data-testid="provider-test"]`)),
	)
	waitJS(t, tab, "the test's answer", `document.querySelector('[data-testid="provider-result"]').textContent.includes('second-model')`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="provider-add"]`)))
	waitJS(t, tab, "the added provider", `document.querySelector('[data-testid="provider-row"][data-name="second"]')?.dataset.source === 'admin'`)
	waitJS(t, tab, "its model to choose", `[...document.querySelectorAll('[data-testid="default-model"] option')].some(o => o.value === 'second/second-model')`)
	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="default-model"]`), "second/second-model"),
		chromedp.Click(chromedp.CSS(`[data-testid="default-model-save"]`)),
	)
	waitJS(t, tab, "the default model, set here", `document.querySelector('[data-testid="default-model"]').value === 'second/second-model' && document.querySelector('[data-testid="default-model-source"]').textContent === 'set here'`)

	openPage(t, ts, tab, "/")
	waitConnected(t, tab)
	send(t, tab, "Who answers?")
	waitJS(t, tab, "the second provider's answer", `[...document.querySelectorAll('.msg-assistant')].some(m => m.textContent.includes('Answered by the second provider.'))`)
	if n := len(second.Requests()); n == 0 {
		t.Fatal("the second provider got no request")
	}
	for _, r := range ts.Fake.Requests() {
		if strings.Contains(fmt.Sprint(r.Messages), "Who answers?") {
			t.Fatalf("the environment's provider answered: %+v", r)
		}
	}
	// The change is in the audit log.
	var audit struct{ Entries []agent.AuditEntry }
	bearerGet(t, adminKey, ts.URL+"/agentik/audit", &audit)
	var actions []string
	for _, e := range audit.Entries {
		actions = append(actions, e.Action+":"+e.Target)
	}
	for _, want := range []string{"site.put_provider:second", "site.set_default_model:"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("audit %v lacks %s", actions, want)
		}
	}
}

// testMCPServer is an MCP server over streamable HTTP with one tool.
func testMCPServer(t testing.TB) string {
	t.Helper()
	s := mcpserver.NewMCPServer("forecasts", "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("forecast", mcp.WithDescription("The weather tomorrow"), mcp.WithString("city", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Sunny in " + req.GetString("city", "")), nil
		})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() }) // agentik's session may still be open

	return hs.URL + "/mcp"
}

// TestBrowserAdminMCPServerOffersTools: an MCP server added in the admin
// panel from an mcp.json entry is started, its tools are listed there,
// and the next turn offers them to the model; a malformed entry is
// refused with its reason and adds nothing.
func TestBrowserAdminMCPServerOffersTools(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t, withKeys(adminKey))
	url := testMCPServer(t)
	tab := signInTab(t, ts, adminKey)
	adminPanel(t, ts, tab)

	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="mcp-name"]`), "weather"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="mcp-entry"]`), `{"command": 5}`),
		chromedp.Click(chromedp.CSS(`[data-testid="mcp-add"]`)),
	)
	waitJS(t, tab, "the entry's error", `document.querySelector('[data-testid="mcp-result"]').textContent.includes('command')`)
	if n := eval[int](t, tab, `document.querySelectorAll('[data-testid="mcp-row"]').length`); n != 0 {
		t.Fatalf("a malformed entry added %d servers", n)
	}

	do(t, tab,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="mcp-name"]').value = ''`),
		chromedp.SetValue(chromedp.CSS(`[data-testid="mcp-entry"]`), fmt.Sprintf(`{"mcpServers": {"weather": {"type": "http", "url": %q}}}`, url)),
		chromedp.Click(chromedp.CSS(`[data-testid="mcp-add"]`)),
	)
	waitJS(t, tab, "the added server", `document.querySelector('[data-testid="mcp-row"][data-name="weather"]')?.dataset.source === 'admin'`)
	// Its state and tools, live.
	waitJS(t, tab, "the server ready", `document.querySelector('[data-testid="mcp-row"][data-name="weather"]')?.dataset.state === 'ready'`)
	if tools := eval[string](t, tab, `document.querySelector('[data-testid="mcp-row"][data-name="weather"] [data-testid="mcp-tools"]').textContent`); !strings.Contains(tools, "forecast") {
		t.Fatalf("tools %q", tools)
	}

	openPage(t, ts, tab, "/")
	waitConnected(t, tab)
	ts.Fake.Enqueue(llmtest.Reply{Text: "Let me look."})
	send(t, tab, "Weather tomorrow?")
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	reqs := ts.Fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	var offered []string
	for _, tl := range reqs[len(reqs)-1].Tools {
		offered = append(offered, tl.Name)
	}
	if !strings.Contains(strings.Join(offered, " "), "forecast") {
		t.Fatalf("the turn offered %v, not the new server's forecast", offered)
	}
}

// TestBrowserAdminSidebarHoldsOwnChats: an admin's sidebar lists her
// chats only, also live; a member's chat is in the admin panel's user
// view, with its owner.
func TestBrowserAdminSidebarHoldsOwnChats(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t, withKeys(adminKey))
	bearer := []string{"Authorization", "Bearer " + adminKey}
	var ann agent.User
	pwCall(t, ts, "POST", "/agentik/users", `{"name":"Ann","email":"ann@example.com"}`, 201, "", &ann, bearer...)
	var annKey agent.NewKey
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/keys", `{"name":"k"}`, 201, "", &annKey, bearer...)
	annBearer := []string{"Authorization", "Bearer " + annKey.Key}
	var mine, hers agent.Conversation
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"Admin's own chat"}`, 201, "", &mine, bearer...)
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"Ann's chat"}`, 201, "", &hers, annBearer...)

	tab := signInTab(t, ts, adminKey)
	items := `[...document.querySelectorAll('#conv-list li')].map(li => li.dataset.id)`
	waitJS(t, tab, "the admin's chat", fmt.Sprintf(`%s.includes(%q)`, items, mine.ID))
	if ids := eval[[]string](t, tab, items); len(ids) != 1 {
		t.Fatalf("sidebar %v, want only %s", ids, mine.ID)
	}
	// A chat Ann makes now does not appear either, while one of the
	// admin's does.
	var later, own2 agent.Conversation
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"Ann's later chat"}`, 201, "", &later, annBearer...)
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"Admin's second chat"}`, 201, "", &own2, bearer...)
	waitJS(t, tab, "the admin's second chat", fmt.Sprintf(`%s.includes(%q)`, items, own2.ID))
	if ids := eval[[]string](t, tab, items); len(ids) != 2 {
		t.Fatalf("sidebar %v, want the admin's two chats", ids)
	}
	// The same list over REST, with mine; without it an admin still lists everyone's.
	var list struct{ Conversations []agent.Conversation }
	pwCall(t, ts, "GET", "/agentik/conversations?mine=true", "", 200, "", &list, bearer...)
	if len(list.Conversations) != 2 {
		t.Fatalf("mine lists %d", len(list.Conversations))
	}

	adminPanel(t, ts, tab)
	waitJS(t, tab, "Ann in the users", `document.querySelector('[data-testid="admin-user"][data-name="`+ann.ID+`"]') !== null`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="admin-user"][data-name="`+ann.ID+`"] [data-testid="admin-user-chats-btn"]`)))
	waitJS(t, tab, "Ann's chats, with their owner", `[...document.querySelectorAll('[data-testid="admin-user-chat"]')].length === 2 && document.querySelector('[data-testid="admin-user-chat"]').textContent.includes('owner: ann@example.com')`)
	if ids := eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="admin-user-chat"]')].map(li => li.dataset.id)`); !contains(ids, hers.ID) || !contains(ids, later.ID) {
		t.Fatalf("user view %v", ids)
	}
	// Opened from there, Ann's chat is read-only, her name on it.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="admin-user-chat"][data-id="`+hers.ID+`"] a`)))
	waitJS(t, tab, "Ann's chat, read-only", `location.pathname === '/c/`+hers.ID+`' && document.querySelector('[data-testid="owner-note"]')?.textContent.includes('ann@example.com') && !document.querySelector('#prompt')?.checkVisibility()`)
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestAdminAPIRefusals: a member is refused on the admin API and page;
// an invalid URL or a malformed mcp.json entry is bad_request and
// changes nothing.
func TestAdminAPIRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(adminKey))
	bearer := []string{"Authorization", "Bearer " + adminKey}
	var ann agent.User
	pwCall(t, ts, "POST", "/agentik/users", `{"name":"Ann","email":"ann@example.com"}`, 201, "", &ann, bearer...)
	var annKey agent.NewKey
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/keys", `{"name":"k"}`, 201, "", &annKey, bearer...)
	annBearer := []string{"Authorization", "Bearer " + annKey.Key}

	pwCall(t, ts, "GET", "/agentik/admin/settings", "", 403, agent.CodeForbidden, nil, annBearer...)
	pwCall(t, ts, "POST", "/agentik/admin/providers", `{"name":"x","base_url":"http://127.0.0.1:1/v1","enabled":true}`, 403, agent.CodeForbidden, nil, annBearer...)
	pwCall(t, ts, "POST", "/agentik/admin/mcp_servers", `{"name":"x","entry":{"url":"http://127.0.0.1:1/mcp"}}`, 403, agent.CodeForbidden, nil, annBearer...)
	pwCall(t, ts, "GET", "/agentik/admin/users/"+ann.ID+"/conversations", "", 403, agent.CodeForbidden, nil, annBearer...)
	resp := ts.do(t, "GET", "/admin", "", annBearer...)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("a member's /admin: %d", resp.StatusCode)
	}

	var before agent.SiteView
	pwCall(t, ts, "GET", "/agentik/admin/settings", "", 200, "", &before, bearer...)
	pwCall(t, ts, "POST", "/agentik/admin/providers", `{"name":"bad","base_url":"not a url","enabled":true}`, 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "POST", "/agentik/admin/providers", `{"name":"Bad Name","base_url":"http://127.0.0.1:1/v1","enabled":true}`, 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "POST", "/agentik/admin/mcp_servers", `{"name":"bad","entry":{"command":5}}`, 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "POST", "/agentik/admin/mcp_servers", `{"name":"bad","entry":"not an object"}`, 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "PUT", "/agentik/admin/default_model", `{"value":"nobody/none"}`, 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "PUT", "/agentik/admin/default_budget", `{"value":"lots"}`, 400, agent.CodeBadRequest, nil, bearer...)
	var after agent.SiteView
	pwCall(t, ts, "GET", "/agentik/admin/settings", "", 200, "", &after, bearer...)
	if len(after.Providers) != len(before.Providers) || len(after.MCPServers) != len(before.MCPServers) || after.DefaultModel != before.DefaultModel || after.DefaultBudget != before.DefaultBudget {
		t.Fatalf("refused changes changed the settings: %+v → %+v", before, after)
	}
	var audit struct{ Entries []agent.AuditEntry }
	bearerGet(t, adminKey, ts.URL+"/agentik/audit", &audit)
	for _, e := range audit.Entries {
		if strings.HasPrefix(e.Action, "site.") {
			t.Fatalf("a refused change was audited: %+v", e)
		}
	}
}

// TestAdminSystemPromptAndBudgetApplyNextTurn: the default system prompt
// and default budget set in the admin panel apply to the next turn.
func TestAdminSystemPromptAndBudgetApplyNextTurn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(adminKey))
	bearer := []string{"Authorization", "Bearer " + adminKey}
	pwCall(t, ts, "PUT", "/agentik/admin/system_prompt", `{"value":"Answer like a pirate."}`, 200, "", nil, bearer...)
	var c agent.Conversation
	pwCall(t, ts, "POST", "/agentik/conversations", `{}`, 201, "", &c, bearer...)
	sendIdle(t, ts, c.ID, "Hello")
	reqs := ts.Fake.Requests()
	if len(reqs) == 0 || !strings.Contains(fmt.Sprint(reqs[len(reqs)-1].Messages[0]), "Answer like a pirate.") {
		t.Fatalf("the turn's system prompt: %+v", reqs)
	}
	var before agent.UsageReport
	bearerGet(t, adminKey, ts.URL+"/agentik/usage?user="+agent.LocalUser, &before)
	pwCall(t, ts, "PUT", "/agentik/admin/default_budget", `{"value":"1/day"}`, 200, "", nil, bearer...)
	var after agent.UsageReport
	bearerGet(t, adminKey, ts.URL+"/agentik/usage?user="+agent.LocalUser, &after)
	if after.Budget == nil || after.Budget.Tokens != 1 {
		t.Fatalf("budget after the change: %+v (before %+v)", after.Budget, before.Budget)
	}
}
