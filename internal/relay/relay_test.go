package relay

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/sse"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// types is a projection that writes each event's type, asks on
// approval_request and ends on end.
type types struct {
	asked bool
	done  bool
}

func (p *types) Event(ev *agent.Event) [][]byte {
	p.asked = p.asked || ev.Type == agent.EventApprovalRequest
	p.done = ev.Type == agent.EventEnd
	return [][]byte{[]byte(ev.Type)}
}
func (p *types) Asking() bool { return p.asked && !p.done }
func (p *types) Parked(waiting []string) [][]byte {
	if len(waiting) == 0 {
		return nil
	}
	p.done = true
	return [][]byte{[]byte("parked:" + strings.Join(waiting, ","))}
}
func (p *types) Done() bool { return p.done }

func relay(t *testing.T, waiting []string, evs ...string) string {
	t.Helper()
	b := broker.New(nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sub, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: "c"}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, typ := range evs {
		b.Publish(agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: typ}})
	}
	rec := httptest.NewRecorder()
	Stream{Sub: sub, Writer: sse.Start(rec), Heartbeat: time.Minute, Last: []byte("[DONE]"),
		Waiting: func(context.Context) ([]string, error) { return waiting, nil }}.Run(ctx, &types{})
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end: %q", rec.Body.String())
	}
	return strings.ReplaceAll(strings.TrimSpace(rec.Body.String()), "\n\n", " ")
}

// TestRun: a stream ends after its turn's end, or once the turn parks on
// the calls it asked about, then writes its last frame.
func TestRun(t *testing.T) {
	if got, want := relay(t, nil, agent.EventAppendText, agent.EventEnd), "data: append_text data: end data: [DONE]"; got != want {
		t.Errorf("a turn: %q, want %q", got, want)
	}
	if got, want := relay(t, []string{"c1"}, agent.EventToolCall, agent.EventApprovalRequest), "data: tool_call data: approval_request data: parked:c1 data: [DONE]"; got != want {
		t.Errorf("a parked turn: %q, want %q", got, want)
	}
}
