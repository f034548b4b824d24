package server_test

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

func TestCompactRESTAndWS(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	var res agent.CompactResult
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/compact", "", 200, &res)
	if res.Compacted || !strings.Contains(res.Reason, "nothing to compact") {
		t.Errorf("empty conversation: %+v", res)
	}
	ts.call(t, "POST", "/agentik/conversations/nope/compact", "", 404, nil)
	var tmp agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"temp":true}`, 201, &tmp)
	// A temp conversation compacts as a stored one does (agent.TestTempBranches).
	ts.call(t, "POST", "/agentik/conversations/"+tmp.ID+"/compact", "", 200, &res)
	if res.Compacted || !strings.Contains(res.Reason, "nothing to compact") {
		t.Errorf("empty temp conversation: %+v", res)
	}

	ts.send(t, c.ID, "one")
	ts.send(t, c.ID, "two")
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/compact", "", 200, &res)
	if !res.Compacted || res.Message == nil || res.Message.Type != agent.MessageSummary || res.Message.Replaces != 2 {
		t.Fatalf("compact: %+v", res)
	}
	var page protocol.MessagesResult
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200, &page)
	last := page.Messages[len(page.Messages)-1]
	if last.Type != agent.MessageSummary || last.Summary == "" || last.TokensBefore == 0 {
		t.Errorf("history ends with %+v", last)
	}

	w := dialWS(t, ts)
	defer w.close()
	w.fail("compact", map[string]any{}, agent.CodeBadRequest)
	w.fail("compact", map[string]any{"conversation_id": "nope"}, agent.CodeNotFound)
	var wsRes agent.CompactResult
	w.ok("compact", map[string]any{"conversation_id": c.ID}, &wsRes)
	if wsRes.Compacted { // only the last turn is left besides the summary
		t.Errorf("second compaction: %+v", wsRes)
	}
	var conv agent.Conversation
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &conv)
	if conv.Context == nil || conv.Context.Window != agent.DefaultContextWindow || conv.Context.Tokens == 0 {
		t.Errorf("conversation context %+v", conv.Context)
	}
}
