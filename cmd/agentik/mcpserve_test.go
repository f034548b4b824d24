package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestMCPServerSDK drives agentik's MCP server (/mcp) with
// @modelcontextprotocol/sdk's Client over streamable HTTP
// (testdata/mcp_sdk.mjs) against the real binary: the agent's tool
// listed, a call whose streamed text arrives as progress, a second call
// continuing by conversation_id, the conversations as resources with their
// transcript, a call without message, a cancelled call that interrupts
// its turn, a tool call needing approval elicited from a client that
// supports elicitation, and decided in the UI for one that does not, and a
// wrong key refused.
func TestMCPServerSDK(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	auth := map[string]string{"Authorization": "Bearer " + a2aKey}
	waitTools(t, p, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "mcp_sdk.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+a2aKey, "AGENTIK_MEMBER_KEY="+memberKey(t, p))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
	}
	var got struct {
		Member struct {
			Resources []string
			Ask       struct {
				IsError bool
				Text    string
			}
			Read int
		}
		Tools []struct {
			Name            string
			Required, Props []string
			Output          bool
		}
		First struct {
			Text       string
			Structured struct {
				ConversationID string `json:"conversation_id"`
				MessageID      string `json:"message_id"`
			}
			IsError      bool
			Progress     int
			ProgressText string
		}
		Second struct {
			Text           string
			ConversationID string `json:"conversation_id"`
		}
		Resources       []string
		Transcript      string
		UnknownResource int `json:"unknown_resource"`
		NoMessage       struct {
			IsError bool
			Text    string
		} `json:"no_message"`
		Cancel             string
		CancelConversation string `json:"cancel_conversation"`
		Elicited           struct {
			Asked, Text string
			IsError     bool
		}
		UIApproved struct {
			Text    string
			Decided bool
		} `json:"ui_approved"`
		WrongKey string `json:"wrong_key"`
		PRM      struct {
			Status int
			URL    string
			Doc    struct {
				Resource      string
				BearerMethods []string `json:"bearer_methods_supported"`
				AuthServers   []string `json:"authorization_servers"`
				ResourceName  string   `json:"resource_name"`
			}
			Fallback struct{ Resource string }
		}
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "ask_agentik" || strings.Join(got.Tools[0].Required, ",") != "message" || !got.Tools[0].Output {
		t.Errorf("tools %+v", got.Tools)
	}
	f := got.First
	if f.Text != llmtest.Tokens(40) || f.IsError || f.Structured.ConversationID == "" || f.Structured.MessageID == "" || f.Progress < 2 || f.ProgressText != f.Text {
		t.Errorf("first call: %+v", f)
	}
	if got.Second.Text != "You said: second" || got.Second.ConversationID != f.Structured.ConversationID {
		t.Errorf("second call %+v", got.Second)
	}
	uri := "agentik://conversations/" + f.Structured.ConversationID
	if !contains(got.Resources, uri) || !strings.Contains(got.Transcript, "## User\n\nsecond") || !strings.Contains(got.Transcript, "You said: second") || got.UnknownResource == 0 {
		t.Errorf("resources %v, transcript %q, unknown resource %d", got.Resources, got.Transcript, got.UnknownResource)
	}
	if !got.NoMessage.IsError || !strings.Contains(got.NoMessage.Text, `"message" is required`) {
		t.Errorf("call without message %+v", got.NoMessage)
	}
	if got.Cancel == "not cancelled" {
		t.Errorf("cancelled call: %s", got.Cancel)
	}
	// The cancellation interrupted the turn: the conversation ends idle,
	// its last answer marked interrupted.
	var hist struct{ Messages []agent.Message }
	waitEnd(t, a2aKey, p.url("/agentik/conversations/"+got.CancelConversation+"/events"))
	requestJSON(t, "GET", p.url("/agentik/conversations/"+got.CancelConversation+"/messages"), "", auth, &hist)
	last := hist.Messages[len(hist.Messages)-1]
	if last.Type != agent.MessageAssistant || !last.Interrupted {
		t.Errorf("after the cancellation the last message is %+v", last)
	}
	if !strings.Contains(got.Elicited.Asked, "everything__echo") || !strings.Contains(got.Elicited.Text, "ping mcp") || got.Elicited.IsError {
		t.Errorf("elicited approval %+v", got.Elicited)
	}
	if !got.UIApproved.Decided || !strings.Contains(got.UIApproved.Text, "ping ui") {
		t.Errorf("approval in the UI %+v", got.UIApproved)
	}
	// Another user: none of the admin's conversations.
	if contains(got.Member.Resources, uri) || !got.Member.Ask.IsError || !strings.Contains(got.Member.Ask.Text, "no conversation") || got.Member.Read == 0 {
		t.Errorf("another user's view: %+v", got.Member)
	}
	if !strings.Contains(got.WrongKey, "unauthorized") {
		t.Errorf("wrong key: %s", got.WrongKey)
	}
	// RFC 9728: the 401 names the metadata, which says to send a key.
	if pr := got.PRM; pr.Status != 401 || pr.URL != p.url("/.well-known/oauth-protected-resource/mcp") || pr.Doc.Resource != p.url("/mcp") ||
		!slices.Equal(pr.Doc.BearerMethods, []string{"header"}) || len(pr.Doc.AuthServers) != 0 || !strings.Contains(pr.Doc.ResourceName, "API key") || pr.Fallback.Resource != p.url("/mcp") {
		t.Errorf("protected-resource metadata: %+v", pr)
	}
}

// conformanceScenarios are the server scenarios of
// @modelcontextprotocol/conformance that apply to agentik's MCP server;
// the others call the suite's own reference tools, prompts and resources
// (test_simple_text, …), logging or completions, which agentik does not
// have (docs/PROTOCOL.md lists them).
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection", "server-sse-multiple-streams"}

// TestMCPConformance runs those scenarios against the real binary.
func TestMCPConformance(t *testing.T) {
	t.Parallel()
	suite := filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("%s is missing: run `npm ci`: %v", suite, err)
	}
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"))
	for _, s := range conformanceScenarios {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// register.mjs lets the suite (written for Node 22) run on Node 20.
		cmd := exec.CommandContext(ctx, "node", "--import", "./testdata/conformance/register.mjs", suite,
			"server", "--url", "http://localhost:"+strings.TrimPrefix(p.addr, "127.0.0.1:")+"/mcp", "--scenario", s)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), ", 0 failed") {
			t.Errorf("conformance scenario %s: %v\n%s", s, err, out)
		}
	}
}

// TestMCPApprovalTimeout: a tool call needing approval, asked of
// @modelcontextprotocol/sdk's Client against the real binary with
// AGENTIK_APPROVAL_TIMEOUT=1s: a client without elicitation, and one that
// cancels the elicitation, leave it to the UI, where nobody decides, so
// the call is denied when the timeout passes and the call ends; a client
// that declines, or accepts with a denial, denies it at once.
func TestMCPApprovalTimeout(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, append(env, "AGENTIK_APPROVAL_TIMEOUT=1s")...)
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + a2aKey})
	type call struct {
		Text      string
		IsError   bool
		Asked, Ms int
	}
	var got struct{ Plain, Cancelled, Declined, Denied call }
	runNode(t, p, "mcp_approval.mjs", a2aKey, &got)
	for name, c := range map[string]call{"no elicitation": got.Plain, "elicitation cancelled": got.Cancelled} {
		if !strings.Contains(c.Text, "approval timed out after 1s") || c.Ms < 1000 {
			t.Errorf("%s: %+v, want the call denied by the timeout", name, c)
		}
	}
	if got.Plain.Asked != 0 || got.Cancelled.Asked != 1 {
		t.Errorf("elicitations asked: %d without the capability, %d with it", got.Plain.Asked, got.Cancelled.Asked)
	}
	if !strings.Contains(got.Declined.Text, "declined by the MCP client's user") || got.Declined.Asked != 1 {
		t.Errorf("declined: %+v", got.Declined)
	}
	if !strings.Contains(got.Denied.Text, "not today") || got.Denied.Asked != 1 {
		t.Errorf("denied: %+v", got.Denied)
	}
}
