package main

import (
	"bufio"
	"strings"
	"syscall"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestQueuedSendSurvivesKill9: a send queued behind a running turn, then
// kill -9 of the real binary: after the restart the dead turn is continued
// to its end and the queued send runs.
func TestQueuedSendSurvivesKill9(t *testing.T) {
	t.Parallel()
	lt := startLongTurn(t)
	sc := bufio.NewScanner(lt.resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: append_text") {
	}
	var q struct {
		MessageID string `json:"message_id"`
		Queued    bool   `json:"queued"`
		Position  int    `json:"position"`
	}
	postJSON(t, lt.p.url("/agentik/conversations/"+lt.conv.ID+"/send"), `{"content":[{"type":"text","body":"queued before the kill"}],"on_busy":"queue"}`, &q)
	if !q.Queued || q.Position != 1 {
		t.Fatalf("queued send: %+v", q)
	}
	if err := lt.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = lt.p.cmd.Wait()
	lt.fake.Enqueue(llmtest.Reply{Text: " continued"})
	lt.fake.Enqueue(llmtest.Reply{Text: "answered after the restart"})
	p := lt.restart()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs after the restart:\n%s", p.logs)
		}
	})
	testwait.For(t, "the queue drained after the restart", func() bool {
		var conv agent.Conversation
		getJSON(t, p.url("/agentik/conversations/"+lt.conv.ID), &conv)
		return !conv.Running && conv.Queued == 0
	})
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+lt.conv.ID+"/messages"), &hist)
	var got []string
	for _, m := range hist.Messages {
		got = append(got, m.Type)
	}
	want := "user_message assistant_message user_message assistant_message" // the killed turn continued, then the queued send
	if strings.Join(got, " ") != want {
		t.Fatalf("history %s, want %s", strings.Join(got, " "), want)
	}
	n := len(hist.Messages)
	if u := hist.Messages[n-2]; u.ID != q.MessageID || u.Content[0].Body != "queued before the kill" {
		t.Errorf("queued message in history: %+v", u)
	}
	if a := hist.Messages[n-1]; a.Content[0].Body != "answered after the restart" {
		t.Errorf("answer %+v", a)
	}
}
