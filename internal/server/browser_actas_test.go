package server_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserActAsAdmin: an admin reading a member's chat (from the
// admin panel's user view) has no composer until she chooses "Act as
// admin"; her message is then marked as hers (live, after a reload and in
// the stored message), its answer is billed to her usage and not the
// owner's, and it is audited. The server holds the rule: an admin's send
// there without act_as_admin is forbidden, and a member asking for
// act_as_admin is forbidden, each writing nothing.
func TestBrowserActAsAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(adminKey))
	bearer := []string{"Authorization", "Bearer " + adminKey}
	annID, annKey := ts.member(t, adminKey, "Ann")
	annBearer := []string{"Authorization", "Bearer " + annKey}
	var hers agent.Conversation
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"Ann's chat"}`, 201, "", &hers, annBearer...)

	// The server's rule, before any UI.
	msgs, sendURL := "/agentik/conversations/"+hers.ID+"/messages", "/agentik/conversations/"+hers.ID+"/send"
	pwCall(t, ts, "POST", sendURL, `{"content":[{"type":"text","body":"sneaky"}]}`, 403, agent.CodeForbidden, nil, bearer...)
	pwCall(t, ts, "POST", sendURL, `{"content":[{"type":"text","body":"me too"}],"act_as_admin":true}`, 403, agent.CodeForbidden, nil, annBearer...)
	if c, err := ts.Convs.Get(t.Context(), hers.ID); err != nil || c.MessageCount != 0 {
		t.Fatalf("refused sends wrote %d messages (%v)", c.MessageCount, err)
	}

	tab := signInTab(t, ts, adminKey)
	openPage(t, ts, tab, "/c/"+hers.ID)
	waitJS(t, tab, "the read-only view", `document.querySelector('[data-testid="owner-note"]')?.textContent.includes('ann@example.com')`)
	if eval[bool](t, tab, `document.querySelector('#prompt')?.checkVisibility() ?? false`) {
		t.Fatal("the admin has a message box in Ann's chat before acting as admin")
	}
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="act-as-admin"]`)))
	waitJS(t, tab, "the message box", `document.querySelector('#prompt').checkVisibility()`)
	ts.Fake.Enqueue(llmtest.Reply{Text: "Hello, admin."})
	send(t, tab, "Hello from the admin")
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	mark := `document.querySelector('#messages [data-type="user_message"] [data-testid="sent-by"]')?.textContent ?? ''`
	waitJS(t, tab, "the mark, live", mark+`.includes('as admin')`)
	live := eval[string](t, tab, mark)

	var page struct{ Messages []agent.Message }
	pwCall(t, ts, "GET", msgs, "", 200, "", &page, bearer...)
	if len(page.Messages) < 2 || page.Messages[0].SentBy != agent.LocalUser {
		t.Fatalf("stored messages %+v: the first is not marked as the admin's", page.Messages)
	}
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, mark); got != live || got == "" {
		t.Fatalf("the mark after a reload is %q, live it was %q", got, live)
	}

	// Billed to the admin, not to Ann.
	var mine, annUse agent.UsageReport
	bearerGet(t, adminKey, ts.URL+"/agentik/usage?user="+agent.LocalUser, &mine)
	bearerGet(t, adminKey, ts.URL+"/agentik/usage?user="+annID, &annUse)
	if used(mine) == 0 || used(annUse) != 0 {
		t.Fatalf("usage: the admin %d tokens, Ann %d; want the turn on the admin's", used(mine), used(annUse))
	}
	var audit struct{ Entries []agent.AuditEntry }
	bearerGet(t, adminKey, ts.URL+"/agentik/audit?action="+agent.AuditAdminWrite, &audit)
	if len(audit.Entries) != 1 || audit.Entries[0].Target != hers.ID || !strings.Contains(string(audit.Entries[0].Details), annID) {
		t.Fatalf("audit %+v", audit.Entries)
	}
}

func used(r agent.UsageReport) int64 {
	var n int64
	for _, d := range r.Days {
		n += d.PromptTokens + d.CompletionTokens
	}
	return n
}
