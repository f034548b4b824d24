package agenttest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// ApprovalContract checks st's waiting tool calls: a stored round, the
// conversation's waiting list, decisions (not_found, conflict, the last
// one), resolving calls, and ending a wait.
func ApprovalContract(t *testing.T, st agent.Store) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cid := id()
	create := &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: id(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid}},
		Conversation: &agent.Conversation{ID: cid, CreatedAt: now, UpdatedAt: now},
	}
	if err := st.Append(ctx, create); err != nil {
		t.Fatal(err)
	}
	rec := func(e agent.Event) *agent.Record {
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: id(), Date: now, ConversationID: cid, Event: &e}}
	}
	wantCode := func(err error, code string) {
		t.Helper()
		if err == nil || agent.ErrorCode(err) != code {
			t.Fatalf("got %v, want code %s", err, code)
		}
	}
	waiting := func(want ...string) {
		t.Helper()
		c, err := st.Conversation(ctx, cid)
		if err != nil || len(c.Waiting) != len(want) {
			t.Fatalf("conversation %+v, %v; want waiting %v", c, err, want)
		}
		for i := range want {
			if c.Waiting[i] != want[i] {
				t.Fatalf("waiting %v, want %v", c.Waiting, want)
			}
		}
	}
	// A waiting agent event after a change carries the calls that wait
	// then, [] for none.
	lastWaiting := []string{"unset"}
	decide := func(call string, approve bool, args string) (*agent.Decision, error) {
		d := &agent.Decision{CallID: call, Approve: approve, Arguments: args, Reason: "r-" + call}
		r := rec(agent.Event{Type: agent.EventApproval, CallID: call, Decision: "x"})
		r.Decide = d
		we := &agent.AgentEvent{Type: agent.AgentWaiting, ConversationID: cid}
		err := st.Append(ctx, r, &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: id(), Date: now, ConversationID: cid, Agent: we}})
		if err == nil {
			lastWaiting = we.Waiting
		}
		return d, err
	}
	sawWaiting := func(want ...string) {
		t.Helper()
		if lastWaiting == nil || strings.Join(lastWaiting, ",") != strings.Join(want, ",") {
			t.Fatalf("waiting event after the decision carries %#v, want %v", lastWaiting, want)
		}
	}

	wantCode(st.Append(ctx, &agent.Record{Event: rec(agent.Event{Type: agent.EventInterrupted}).Event, EndWait: true}), agent.CodeConflict)
	w := rec(agent.Event{Type: agent.EventApprovalRequest, CallID: "a", Name: "s__w"})
	asked := now.Add(-time.Minute)
	w.Wait = []agent.PendingCall{{CallID: "a", Name: "s__w", Arguments: `{}`, Needs: true, Requested: asked}, {CallID: "b", Name: "s__r", Arguments: `{"x":1}`, Requested: asked}, {CallID: "c", Name: "s__w", Arguments: `{}`, Needs: true, Requested: asked}}
	if err := st.Append(ctx, w); err != nil {
		t.Fatal(err)
	}
	waiting("a", "c")
	if list, _, err := st.Conversations(ctx, 0, 100); err != nil || !slices.ContainsFunc(list, func(c agent.Conversation) bool {
		return c.ID == cid && strings.Join(c.Waiting, ",") == "a,c"
	}) {
		t.Fatalf("the list %+v, %v does not show the waiting calls a, c", list, err)
	}
	_, err := decide("zz", true, "")
	wantCode(err, agent.CodeNotFound)
	_, err = decide("b", true, "")
	wantCode(err, agent.CodeConflict) // needs no decision
	d, err := decide("a", true, `{"y":2}`)
	if err != nil || d.Last {
		t.Fatalf("first decision: %+v, %v", d, err)
	}
	sawWaiting("c")
	_, err = decide("a", false, "")
	wantCode(err, agent.CodeConflict)
	waiting("c")
	if d, err = decide("c", false, ""); err != nil || !d.Last {
		t.Fatalf("last decision: %+v, %v", d, err)
	}
	sawWaiting()
	waiting()
	pend, err := st.Pending(ctx, cid)
	if err != nil || len(pend) != 3 || !pend[0].Approved || pend[0].Edited != `{"y":2}` || pend[1].Needs || pend[2].Approved || pend[2].Reason != "r-c" || pend[1].Arguments != `{"x":1}` {
		t.Fatalf("pending %+v, %v", pend, err)
	}
	if !pend[0].Requested.Equal(asked) || !pend[2].Requested.Equal(asked) {
		t.Fatalf("requested %v, %v; want %v (the stored request time)", pend[0].Requested, pend[2].Requested, asked)
	}
	r := rec(agent.Event{Type: agent.EventToolResult, CallID: "a"})
	r.Resolve = "a"
	if err := st.Append(ctx, r); err != nil {
		t.Fatal(err)
	}
	if pend, _ = st.Pending(ctx, cid); len(pend) != 2 || pend[0].CallID != "b" {
		t.Fatalf("pending after resolving a: %+v", pend)
	}

	// A new wait, ended without decisions.
	for _, call := range []string{"b", "c"} {
		r := rec(agent.Event{Type: agent.EventToolResult, CallID: call})
		r.Resolve = call
		if err := st.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	w = rec(agent.Event{Type: agent.EventApprovalRequest, CallID: "e"})
	w.Wait = []agent.PendingCall{{CallID: "e", Name: "s__w", Arguments: `{}`, Needs: true}}
	if err := st.Append(ctx, w); err != nil {
		t.Fatal(err)
	}
	waiting("e")
	end := rec(agent.Event{Type: agent.EventToolResult, CallID: "e"})
	end.EndWait, end.Resolve = true, "e"
	if err := st.Append(ctx, end); err != nil {
		t.Fatal(err)
	}
	waiting()
	if pend, _ = st.Pending(ctx, cid); len(pend) != 0 {
		t.Fatalf("pending after the end: %+v", pend)
	}
	_, err = decide("e", true, "")
	wantCode(err, agent.CodeConflict) // ended: no longer waits
	_, err = decide("a", true, "")
	wantCode(err, agent.CodeNotFound) // of an earlier round
}
