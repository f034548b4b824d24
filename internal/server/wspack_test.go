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
// fresh connection to url and returns the messages it received after the subscribe reply,
// up to and including the one that holds caught_up.
func rawReplay(t *testing.T, url, conv string) [][]byte {
	t.Helper()
	w := dialWSOpts(t, url, nil)
	defer w.close()
	// Not the all stream: the title, which is set after the turn, could
	// land between two replays.
	w.write(`{"op":"subscribe","id":"r1","stream":"conversation","conversation_id":"` + conv + `","after":0}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var msgs [][]byte
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if bytes.HasPrefix(b, []byte(`{"type":"reply"`)) && !bytes.Contains(b, []byte("\n")) {
			continue
		}
		msgs = append(msgs, b)
		if bytes.Contains(b, []byte(`"type":"caught_up"`)) {
			return msgs
		}
	}
}

// With ?pack=1 a resume's replay comes in a few messages, each holding
// several frames, one per line; the lines are, byte for byte, the frames a
// connection without it receives one per message.
func TestWSPackedReplay(t *testing.T) {
	leakCheck(t)
	ts := newTestServer(t)
	a := dialWS(t, ts)
	c := a.create("", false)
	sub := a.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	a.send(c.ID, "[[tokens=150 delay=10ms]]") // slower than a frame: an event per token
	a.collect(sub.Sub, turnEnds(c.ID))
	a.close()

	plain := rawReplay(t, ts.wsURL(), c.ID)
	packed := rawReplay(t, ts.wsURL()+"?pack=1", c.ID)
	var lines [][]byte
	for _, m := range packed {
		lines = append(lines, bytes.Split(m, []byte("\n"))...)
	}
	if len(lines) != len(plain) {
		t.Fatalf("packed: %d frames in %d messages, want the %d frames sent unpacked", len(lines), len(packed), len(plain))
	}
	for i := range plain {
		if bytes.Contains(plain[i], []byte("\n")) {
			t.Fatalf("an unpacked message holds a newline: %s", plain[i])
		}
		if !bytes.Equal(lines[i], plain[i]) {
			t.Fatalf("frame %d differs:\npacked   %s\nunpacked %s", i, lines[i], plain[i])
		}
	}
	if len(plain) < 100 {
		t.Fatalf("only %d frames replayed: the turn was too short to tell", len(plain))
	}
	if len(packed) > len(plain)/10 {
		t.Errorf("%d frames came in %d packed messages: not packed", len(plain), len(packed))
	}
}

// A live packed connection still gets every event, in order, and its
// replies: commands and events share the packed messages.
func TestWSPackedLive(t *testing.T) {
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
