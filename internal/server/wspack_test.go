package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
)

// rawReplay subscribes to a conversation's events from cursor 0 on a
// fresh connection to url and returns the frames it received after the
// subscribe reply, up to caught_up, and how many messages they came in. A
// packed message may also hold the reply.
func rawReplay(t *testing.T, url, conv string) (frames [][]byte, msgs int) {
	t.Helper()
	w := dialWSOpts(t, url, nil)
	defer w.close()
	// Not the all stream: the title, which is set after the turn, could
	// land between two replays.
	w.write(`{"op":"subscribe","id":"r1","stream":"conversation","conversation_id":"` + conv + `","after":0}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, m, err := w.c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		counted := false
		for _, f := range bytes.Split(m, []byte("\n")) {
			if bytes.HasPrefix(f, []byte(`{"type":"reply"`)) {
				continue
			}
			frames = append(frames, f)
			if !counted {
				msgs, counted = msgs+1, true
			}
			if bytes.HasPrefix(f, []byte(`{"type":"caught_up"`)) {
				return frames, msgs
			}
		}
	}
}

// With ?pack=1 a resume's replay comes in a few messages, each holding
// several frames, one per line; the lines are, byte for byte, the frames a
// connection without it receives one per message.
func TestWSPackedReplay(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	a := dialWS(t, ts)
	c := a.create("packed", false) // titled: no title lands after the turns
	sub := a.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	// Many short turns: well over a hundred events whatever the runner
	// coalesces, without depending on the machine's timing.
	for range 30 {
		a.send(c.ID, "[[tokens=1]] again")
		a.collect(sub.Sub, turnEnds(c.ID))
	}
	a.close()

	plain, plainMsgs := rawReplay(t, ts.wsURL(), c.ID)
	lines, packed := rawReplay(t, ts.wsURL()+"?pack=1", c.ID)
	if plainMsgs != len(plain) {
		t.Fatalf("unpacked: %d frames in %d messages", len(plain), plainMsgs)
	}
	if len(lines) != len(plain) {
		t.Fatalf("packed: %d frames in %d messages, want the %d frames sent unpacked", len(lines), packed, len(plain))
	}
	for i := range plain {
		if !bytes.Equal(lines[i], plain[i]) {
			t.Fatalf("frame %d differs:\npacked   %s\nunpacked %s", i, lines[i], plain[i])
		}
	}
	if len(plain) < 100 {
		t.Fatalf("only %d frames replayed: the turns were too short to tell", len(plain))
	}
	if packed > len(plain)/10 {
		t.Errorf("%d frames came in %d packed messages: not packed", len(plain), packed)
	}
}

// A live packed connection still gets every event, in order, and its
// replies: commands and events share the packed messages.
func TestWSPackedLive(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWSOpts(t, ts.wsURL()+"?pack=1", nil)
	defer w.close()
	c := w.create("", false)
	sub := w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	w.send(c.ID, "[[tokens=300 delay=100us]]")
	live := w.collect(sub.Sub, turnEnds(c.ID))
	sameEvents(t, "packed live vs replay", live, replay(t, ts, map[string]any{"stream": "conversation", "conversation_id": c.ID}))
}

// A pack value other than 1 or 0 is refused before the upgrade, with a
// code and a message that says what to send.
func TestWSPackParamRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, ts.wsURL()+"?pack=yes", nil)
	if err == nil {
		t.Fatal("the upgrade with pack=yes succeeded")
	}
	if resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("pack=yes: response %v, want 400", resp)
	}
	var e agent.Error
	ts.call(t, "GET", "/agentik/ws?pack=yes", "", http.StatusBadRequest, &e)
	if e.Code != agent.CodeBadRequest || !strings.Contains(e.Message, "pack=1") {
		t.Errorf("pack=yes: error %+v, want bad_request naming pack=1", e)
	}
}
