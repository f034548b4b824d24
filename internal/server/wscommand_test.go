package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/testwait"
)

// withCommandTimeout sets the WebSocket command timeout.
func withCommandTimeout(d time.Duration) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.WSCommandTimeout = d }
}

// withLoadedMachine widens the server's WebSocket write, pong and stall
// timers (10 s, 15 s, 2 s in production) to testwait.Timeout, for a test
// whose clients a loaded machine may starve that long.
func withLoadedMachine() rigOption {
	return func(_ *agent.Config, s *server.Config) {
		s.WSWriteTimeout, s.WSPongTimeout, s.WSStallTimeout = testwait.Timeout, testwait.Timeout, testwait.Timeout
	}
}

// TestWSSlowCommandNeverStallsTheSocket holds a compact's summary call
// open: a ping sent after it is answered at once, the socket keeps
// reading, and the compact ends under its command timeout with an error
// that says so, nothing changed.
func TestWSSlowCommandNeverStallsTheSocket(t *testing.T) {
	ts := newTestServer(t, withCommandTimeout(time.Second))
	c := ts.create(t)
	ts.send(t, c.ID, "one")
	ts.send(t, c.ID, "two")
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "a summary", Hold: hold})

	w := dialWS(t, ts)
	defer w.close()
	w.write(`{"op":"compact","id":"slow","conversation_id":"` + c.ID + `"}`)
	w.write(`{"op":"ping","id":"quick"}`)
	f, err := w.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != protocol.FrameReply || f.ID == nil || *f.ID != "quick" || !f.OK {
		t.Fatalf("first frame %+v, want the ping's reply while the compact runs", f)
	}
	// Other commands run too once the compact ends; its reply comes first.
	w.write(`{"op":"get_conversation","id":"after","conversation_id":"` + c.ID + `"}`)
	slow := w.replyTo("slow")
	if slow.OK || slow.Error == nil || !strings.Contains(slow.Error.Message, "1s") {
		t.Fatalf("the held compact answered %+v, want an error naming its 1s timeout", slow)
	}
	if after := w.replyTo("after"); !after.OK {
		t.Fatalf("get_conversation after the compact: %+v", after)
	}
	var page protocol.MessagesResult
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200, &page)
	for _, m := range page.Messages {
		if m.Type == agent.MessageSummary {
			t.Fatalf("a timed-out compact wrote a summary: %+v", m)
		}
	}
}
