package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

type scheduleRuns struct {
	Runs []struct {
		Slot           time.Time `json:"slot"`
		ConversationID string    `json:"conversation_id"`
		Outcome        string    `json:"outcome"`
	} `json:"runs"`
}

// answered reports whether conversation id on p holds one question and its
// answer.
func answered(t *testing.T, p *proc, id string) bool {
	t.Helper()
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+id+"/messages"), &hist)
	return len(hist.Messages) == 2 && hist.Messages[0].Type == agent.MessageUser &&
		hist.Messages[1].Type == agent.MessageAssistant && len(hist.Messages[1].Content) > 0 &&
		strings.Contains(hist.Messages[1].Content[0].Body, "summarize my issues")
}

// waitRuns follows p's all stream from the start until n turns have ended
// (every turn of these tests is a run of the schedule), then checks that n
// of the schedule's runs have an answered conversation.
func waitRuns(t *testing.T, p *proc, id string, n int) scheduleRuns {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends := 0
	for ev := range sse(t, ctx, "", p.url("/agentik/events/all"), "0") {
		var e allEvent
		if json.Unmarshal([]byte(ev.data), &e) == nil && e.Type == "conversation" && e.Event.Type == "end" {
			if ends++; ends == n {
				break
			}
		}
	}
	if ends < n {
		t.Fatalf("%d of %d runs ended within 30 s; logs:\n%s", ends, n, p.logs)
	}
	var runs scheduleRuns
	getJSON(t, p.url("/agentik/schedules/"+id+"/runs"), &runs)
	done := 0
	for _, r := range runs.Runs {
		if r.ConversationID != "" && answered(t, p, r.ConversationID) {
			done++
		}
	}
	if done < n {
		t.Fatalf("%d of %d runs answered: %+v; logs:\n%s", done, n, runs, p.logs)
	}
	return runs
}

// TestScheduleKill9 runs a schedule of three slots two seconds apart on
// the real binary, kills it with SIGKILL after the first run, restarts it:
// exactly three runs, one per slot, each a stored conversation with the
// answer.
func TestScheduleKill9(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	addr := freeAddr(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_SCHEDULE_MIN_INTERVAL=1s"}
	p := start(t, addr, db, env...)

	// Bad input: bad_request naming the field, nothing stored.
	for field, body := range map[string]string{
		"rrule":    `{"prompt":"x","rrule":"FREQ=OFTEN"}`,
		"cron":     `{"prompt":"x","cron":"every day"}`,
		"timezone": `{"prompt":"x","cron":"0 9 * * 1-5","timezone":"Atlantis/Capital"}`,
	} {
		resp, err := http.Post(p.url("/agentik/schedules"), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e agent.Error
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != 400 || e.Code != agent.CodeBadRequest || !strings.Contains(e.Message, field) {
			t.Errorf("%s: %d %s", field, resp.StatusCode, b)
		}
	}
	var list struct{ Schedules []agent.Schedule }
	getJSON(t, p.url("/agentik/schedules"), &list)
	if len(list.Schedules) != 0 {
		t.Fatalf("bad input stored %+v", list.Schedules)
	}

	var sc agent.Schedule
	postJSON(t, p.url("/agentik/schedules"), `{"prompt":"summarize my issues","rrule":"FREQ=SECONDLY;INTERVAL=2;COUNT=3"}`, &sc)
	if sc.ID == "" || sc.NextRun == nil || !sc.Enabled || sc.Missed != "once" {
		t.Fatalf("created %+v", sc)
	}
	waitRuns(t, p, sc.ID, 1)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start(t, addr, db, env...)
	runs := waitRuns(t, p, sc.ID, 3)
	if len(runs.Runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(runs.Runs), runs)
	}
	convs := map[string]bool{}
	for i, r := range runs.Runs {
		convs[r.ConversationID] = true
		if i > 0 && r.Slot.Sub(runs.Runs[i-1].Slot) != 2*time.Second {
			t.Errorf("slots %v", runs)
		}
	}
	if len(convs) != 3 {
		t.Errorf("runs share conversations: %+v", runs)
	}
	getJSON(t, p.url("/agentik/schedules/"+sc.ID), &sc)
	if sc.NextRun != nil {
		t.Errorf("next_run %v after COUNT=3", sc.NextRun)
	}

	// agentik schedule: the CLI over the same routes.
	cli := func(args ...string) string {
		t.Helper()
		var out, errb strings.Builder
		getenv := func(k string) string { return map[string]string{"AGENTIK_URL": p.url("")}[k] }
		if err := runSchedule(context.Background(), args, getenv, &out, &errb); err != nil {
			t.Fatalf("agentik schedule %v: %v %s", args, err, errb.String())
		}
		return out.String()
	}
	if out := cli("runs", sc.ID); strings.Count(out, "started") != 3 {
		t.Errorf("schedule runs:\n%s", out)
	}
	id := strings.TrimSpace(cli("add", "standup notes", "--cron", "0 9 * * 1-5", "--timezone", "Europe/Paris"))
	if out := cli("list"); !strings.Contains(out, id) || !strings.Contains(out, "Europe/Paris") {
		t.Errorf("schedule list:\n%s", out)
	}
	cli("delete", id)
	if out := cli("list"); strings.Contains(out, id) {
		t.Errorf("deleted schedule still listed:\n%s", out)
	}
}

// TestScheduleTwoInstances runs two binaries on one PostgreSQL database:
// both tick the same schedule, each slot still runs once.
func TestScheduleTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	_, fakeURL := llmtest.NewHTTPServer(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_SCHEDULE_MIN_INTERVAL=1s"}
	a := startDSN(t, dsn, env...)
	b := startDSN(t, dsn, env...)
	var sc agent.Schedule
	postJSON(t, a.url("/agentik/schedules"), `{"prompt":"summarize my issues","rrule":"FREQ=SECONDLY;INTERVAL=2;COUNT=3"}`, &sc)
	runs := waitRuns(t, b, sc.ID, 3)
	if len(runs.Runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(runs.Runs), runs)
	}
	var list struct{ Conversations []agent.Conversation }
	getJSON(t, b.url("/agentik/conversations"), &list)
	if len(list.Conversations) != 3 {
		t.Fatalf("%d conversations, want 3 (one per slot)", len(list.Conversations))
	}
}
