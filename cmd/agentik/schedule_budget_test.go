package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/agentik/agentik/internal/webhook"
)

// TestScheduledRunWebhookAndBudget: a member's scheduled runs are ordinary
// turns of theirs, against the real binary: each fires a signed
// turn.ended webhook with its conversation and answer, its tokens count on
// the owner's usage (not the admin's, not another member's), and once
// the owner's budget is used up the next slot is refused with
// quota_exceeded instead of calling the model.
func TestScheduledRunWebhookAndBudget(t *testing.T) {
	t.Parallel()
	secret, err := webhook.ParseSecret(a2aSecret)
	if err != nil {
		t.Fatal(err)
	}
	hooks := make(chan webhook.Message, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if r.Header.Get("webhook-signature") != webhook.Sign(secret, r.Header.Get("webhook-id"), ts, body) {
			t.Errorf("webhook with a bad signature: %s", body)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var m webhook.Message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("webhook body %s: %v", body, err)
		}
		hooks <- m
	}))
	defer recv.Close()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"),
		"AGENTIK_SCHEDULE_MIN_INTERVAL=1s", "AGENTIK_DEFAULT_BUDGET=100/day", "AGENTIK_WEBHOOKS="+recv.URL, "AGENTIK_WEBHOOK_SECRET="+a2aSecret)
	tm.fake.Enqueue(llmtest.Reply{Text: "first summary", Usage: &agent.Usage{PromptTokens: 70, CompletionTokens: 10, TotalTokens: 80}})
	tm.fake.Enqueue(llmtest.Reply{Text: "second summary", Usage: &agent.Usage{PromptTokens: 30, CompletionTokens: 10, TotalTokens: 40}})
	tm.fake.Enqueue(llmtest.Reply{Text: "a third call: past the budget"})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// (Titles from the first line: every model call is a run's.)
	// Four slots two seconds apart, the first now (DTSTART is the
	// creation time).
	var sc agent.Schedule
	must(t, tm.ann.key, "POST", tm.p.url("/agentik/schedules"), `{"prompt":"summarize my issues","rrule":"FREQ=SECONDLY;INTERVAL=2;COUNT=4"}`, &sc)

	var convs []string
	for _, want := range []string{"first summary", "second summary"} {
		var m webhook.Message
		select {
		case m = <-hooks:
		case <-ctx.Done():
			t.Fatalf("no turn.ended webhook for %q within 30 s; logs:\n%s", want, tm.p.logs)
		}
		if m.Type != webhook.EventTurnEnded || m.Data.Outcome != "ok" || m.Data.Text != want || m.Data.ConversationID == "" {
			t.Fatalf("webhook %+v, want turn.ended ok with %q", m, want)
		}
		convs = append(convs, m.Data.ConversationID)
	}
	if convs[0] == convs[1] {
		t.Fatalf("both runs in one conversation %s", convs[0])
	}
	for _, id := range convs {
		if code, _ := call(t, tm.ann.key, "GET", tm.p.url("/agentik/conversations/"+id), ""); code != 200 {
			t.Errorf("ann reading her run's conversation %s: %d", id, code)
		}
		if code, _ := call(t, tm.bob.key, "GET", tm.p.url("/agentik/conversations/"+id), ""); code != 404 {
			t.Errorf("bob reading ann's run's conversation %s: %d, want 404", id, code)
		}
	}

	var rep agent.UsageReport
	must(t, tm.ann.key, "GET", tm.p.url("/agentik/usage"), "", &rep)
	if len(rep.Days) != 1 || rep.Days[0].UserID != tm.ann.id || rep.Budget == nil || rep.Budget.Used != 120 {
		t.Fatalf("ann's usage after two runs: %+v, want 120 tokens of her budget", rep)
	}
	must(t, tm.bob.key, "GET", tm.p.url("/agentik/usage"), "", &rep)
	if len(rep.Days) != 0 {
		t.Errorf("bob's usage: %+v, want none", rep)
	}

	// The third and fourth slots: ann is past her budget. Each run is
	// recorded as failed, naming the budget, before any conversation is
	// made (issue 46, item 13: a refused run left an empty one).
	var runs struct {
		Runs []agent.ScheduleRun `json:"runs"`
	}
	testwait.ForErr(t, "the schedule's four runs", func() error {
		runs.Runs = nil
		must(t, tm.ann.key, "GET", tm.p.url("/agentik/schedules/"+sc.ID+"/runs"), "", &runs)
		if len(runs.Runs) < 4 {
			return fmt.Errorf("%d runs: %+v", len(runs.Runs), runs.Runs)
		}
		for _, r := range runs.Runs[2:4] {
			if r.Outcome == agent.RunClaimed {
				return fmt.Errorf("run of %s still running: %+v", r.Slot, r)
			}
		}
		return nil
	})
	for _, r := range runs.Runs[2:4] {
		if r.Outcome != agent.RunFailed || !strings.Contains(r.Error, "100/day") || r.ConversationID != "" {
			t.Errorf("a run past the budget: %+v, want failed naming the budget, with no conversation", r)
		}
	}
	var list struct {
		Conversations []agent.Conversation `json:"conversations"`
	}
	must(t, tm.ann.key, "GET", tm.p.url("/agentik/conversations"), "", &list)
	if len(list.Conversations) != 2 {
		t.Errorf("ann has %d conversations, want the two runs' (a refused run makes none)", len(list.Conversations))
	}
	if got := len(tm.fake.Requests()); got != 2 || tm.fake.Pending() != 1 {
		t.Errorf("%d model calls (%d replies left), want 2: the refused run calls none", got, tm.fake.Pending())
	}
}
