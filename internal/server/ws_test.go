package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/testwait"
)

// leakCheck verifies, after every other cleanup of the test, that no
// goroutine started by the test is left. goleak sees the whole process:
// the test runs alone (in a child process, see alone).
func leakCheck(t *testing.T) {
	t.Helper()
	if os.Getenv(aloneEnv) != t.Name() {
		t.Fatal("leakCheck sees every goroutine of the process: run the test alone (if !alone(t) { return })")
	}
	opts := []goleak.Option{
		goleak.IgnoreCurrent(),
		// gorm's statement cache starts a janitor it never stops (store).
		goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"),
	}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// wsClient is a raw protocol client for tests: one goroutine uses it.
type wsClient struct {
	t       testing.TB
	c       *websocket.Conn
	n       int
	pending []protocol.Frame // frames read while waiting for a reply
	lines   [][]byte         // frames of a packed message (?pack=1) not read yet
}

func (ts *testServer) wsURL() string {
	return "ws" + strings.TrimPrefix(ts.URL, "http") + "/agentik/ws"
}

func dialWS(t testing.TB, ts *testServer) *wsClient { return dialWSOpts(t, ts.wsURL(), nil) }

// smallBuffers makes the sockets of a listener's connections small, so a
// client that stops reading soon blocks the server's writes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(8 << 10)
	}
	return c, err
}

// dialSlowWS dials the app through a second listener with small socket
// buffers on both ends.
func dialSlowWS(t testing.TB, ts *testServer) *wsClient {
	hs := httptest.NewUnstartedServer(ts.App)
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(hs.Close)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(8 << 10)
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/agentik/ws"
	return dialWSOpts(t, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
}

func dialWSOpts(t testing.TB, url string, opts *websocket.DialOptions) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	w := &wsClient{t: t, c: c}
	t.Cleanup(func() { _ = c.CloseNow() })
	return w
}

func (w *wsClient) close() { _ = w.c.Close(websocket.StatusNormalClosure, "") }

func (w *wsClient) write(raw string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
		w.t.Fatal(err)
	}
}

// readFrame reads one frame from the socket; a packed message's frames
// are read one by one.
func (w *wsClient) readFrame() (protocol.Frame, error) {
	if len(w.lines) == 0 {
		// The suite's one bound of a wait: a private 20 s ran out under
		// load (TestWSManyClientsManyTurns: many clients' turns in a child
		// process beside the package's other tests).
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		_, m, err := w.c.Read(ctx)
		if err != nil {
			return protocol.Frame{}, err
		}
		w.lines = bytes.Split(m, []byte("\n"))
	}
	b := w.lines[0]
	w.lines = w.lines[1:]
	var f protocol.Frame
	if err := json.Unmarshal(b, &f); err != nil {
		return protocol.Frame{}, fmt.Errorf("frame %s: %w", b, err)
	}
	return f, nil
}

// call sends a command and returns its reply; other frames are kept for next.
func (w *wsClient) call(op string, fields map[string]any) protocol.Frame {
	w.t.Helper()
	w.n++
	id := fmt.Sprintf("r%d", w.n)
	m := map[string]any{"op": op, "id": id}
	for k, v := range fields {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	w.write(string(b))
	return w.replyTo(id)
}

func (w *wsClient) replyTo(id string) protocol.Frame {
	w.t.Helper()
	for {
		f, err := w.readFrame()
		if err != nil {
			w.t.Fatalf("waiting for reply %s: %v", id, err)
		}
		if f.Type == protocol.FrameReply && f.ID != nil && *f.ID == id {
			return f
		}
		if f.Type == protocol.FrameReply {
			w.t.Fatalf("reply for %v while waiting for %s", f.ID, id)
		}
		w.pending = append(w.pending, f)
	}
}

// ok runs a command that must succeed and decodes its result into out.
func (w *wsClient) ok(op string, fields map[string]any, out any) {
	w.t.Helper()
	f := w.call(op, fields)
	if !f.OK {
		w.t.Fatalf("%s %v: %+v", op, fields, f.Error)
	}
	if out != nil {
		if err := json.Unmarshal(f.Result, out); err != nil {
			w.t.Fatalf("%s result %s: %v", op, f.Result, err)
		}
	}
}

// fail runs a command that must fail with code.
func (w *wsClient) fail(op string, fields map[string]any, code string) {
	w.t.Helper()
	f := w.call(op, fields)
	if f.OK || f.Error == nil || f.Error.Code != code {
		w.t.Fatalf("%s %v: got ok=%v %+v, want error %s", op, fields, f.OK, f.Error, code)
	}
	if f.Error.Message == "" {
		w.t.Fatalf("%s: error without message", op)
	}
}

func (w *wsClient) subscribe(fields map[string]any) protocol.SubscribeResult {
	w.t.Helper()
	var r protocol.SubscribeResult
	w.ok("subscribe", fields, &r)
	if r.Sub == "" || r.Epoch == "" {
		w.t.Fatalf("subscribe result %+v", r)
	}
	return r
}

// next returns the next frame that is not a reply.
func (w *wsClient) next() protocol.Frame {
	w.t.Helper()
	if len(w.pending) > 0 {
		f := w.pending[0]
		w.pending = w.pending[1:]
		return f
	}
	for {
		f, err := w.readFrame()
		if err != nil {
			w.t.Fatalf("next frame: %v", err)
		}
		if f.Type != protocol.FrameReply {
			return f
		}
	}
}

// collect reads event frames of sub until stop returns true for one
// (included) and returns their raw events. Other frames fail the test.
func (w *wsClient) collect(sub string, stop func(agent.AllEvent) bool) []json.RawMessage {
	w.t.Helper()
	var out []json.RawMessage
	for {
		f := w.next()
		if f.Type == protocol.FrameCaughtUp && f.Sub == sub {
			continue
		}
		if f.Type != protocol.FrameEvent || f.Sub != sub {
			w.t.Fatalf("got %+v, want an event of %s", f, sub)
		}
		out = append(out, f.Event)
		if stop(decodeEvent(w.t, f.Event)) {
			return out
		}
	}
}

func decodeEvent(t testing.TB, b []byte) agent.AllEvent {
	t.Helper()
	var ev agent.AllEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("event %s: %v", b, err)
	}
	return ev
}

// turnEnds stops collect at the end of a turn of conversation id.
func turnEnds(id string) func(agent.AllEvent) bool {
	return func(ev agent.AllEvent) bool {
		return ev.ConversationID == id && ev.Event != nil && ev.Event.Type == agent.EventEnd
	}
}

// endCount stops collect at the n-th end of any turn.
func endCount(n int) func(agent.AllEvent) bool {
	seen := 0
	return func(ev agent.AllEvent) bool {
		if ev.Event != nil && ev.Event.Type == agent.EventEnd {
			seen++
		}
		return seen == n
	}
}

func text(s string) []agent.Content { return []agent.Content{agent.Text(s)} }

func (w *wsClient) create(title string, temp bool) agent.Conversation {
	w.t.Helper()
	var c agent.Conversation
	w.ok("create_conversation", map[string]any{"title": title, "temp": temp}, &c)
	return c
}

// send sends a message.
func (w *wsClient) send(id, s string) protocol.SendResult {
	w.t.Helper()
	var r protocol.SendResult
	w.ok("send", map[string]any{"conversation_id": id, "content": text(s)}, &r)
	return r
}

// replay reads every stored event of a stream from cursor 0 on a fresh
// connection, until caught_up.
func replay(t testing.TB, ts *testServer, fields map[string]any) []json.RawMessage {
	t.Helper()
	w := dialWS(t, ts)
	defer w.close()
	f := map[string]any{"after": 0}
	for k, v := range fields {
		f[k] = v
	}
	r := w.subscribe(f)
	var out []json.RawMessage
	for {
		fr := w.next()
		switch fr.Type {
		case protocol.FrameEvent:
			out = append(out, fr.Event)
		case protocol.FrameCaughtUp:
			if fr.Sub != r.Sub {
				t.Fatalf("caught_up of %s", fr.Sub)
			}
			return out
		default:
			t.Fatalf("replay: unexpected %+v", fr)
		}
	}
}

func seqOf(t testing.TB, b []byte) int64 { return decodeEvent(t, b).Seq }

// sameEvents compares two event sequences byte for byte.
func sameEvents(t testing.TB, what string, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: event %d differs:\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

func TestWSCommands(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)

	w.ok("ping", nil, nil)
	c := w.create("first", false)
	if c.ID == "" || c.Title != "first" || c.Temp {
		t.Fatalf("created %+v", c)
	}
	var got agent.Conversation
	w.ok("get_conversation", map[string]any{"conversation_id": c.ID}, &got)
	if got.ID != c.ID || got.Title != "first" {
		t.Fatalf("get_conversation %+v", got)
	}
	var list protocol.ListResult
	w.ok("list_conversations", map[string]any{"limit": 10}, &list)
	if list.Total != 1 || len(list.Conversations) != 1 || list.Conversations[0].ID != c.ID {
		t.Fatalf("list %+v", list)
	}
	sub := w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})

	sr := w.send(c.ID, "hello there")
	if sr.MessageID == "" || sr.Seq == 0 || sr.Duplicate {
		t.Fatalf("send %+v", sr)
	}
	evs := w.collect(sub.Sub, turnEnds(c.ID))
	var types []string
	for _, b := range evs {
		ev := decodeEvent(t, b)
		if len(types) == 0 || types[len(types)-1] != ev.Event.Type || ev.Event.Type != agent.EventAppendText {
			types = append(types, ev.Event.Type)
		}
	}
	if want := "message start_response append_text message end"; strings.Join(types, " ") != want {
		t.Fatalf("turn events %q, want %q", strings.Join(types, " "), want)
	}
	var msgs protocol.MessagesResult
	w.ok("get_messages", map[string]any{"conversation_id": c.ID}, &msgs)
	if len(msgs.Messages) != 2 || msgs.Messages[0].ID != sr.MessageID || msgs.Messages[1].Type != agent.MessageAssistant {
		t.Fatalf("messages %+v", msgs)
	}
	if body := msgs.Messages[1].Content[0].Body; body != "You said: hello there" {
		t.Fatalf("answer %q", body)
	}
	w.ok("get_messages", map[string]any{"conversation_id": c.ID, "after": sr.Seq}, &msgs)
	if len(msgs.Messages) != 1 {
		t.Fatalf("messages after %d: %+v", sr.Seq, msgs)
	}

	// A client_id used before returns the original message and starts nothing.
	var first, again protocol.SendResult
	w.ok("send", map[string]any{"conversation_id": c.ID, "content": text("once"), "client_id": "k1"}, &first)
	w.collect(sub.Sub, turnEnds(c.ID))
	w.ok("send", map[string]any{"conversation_id": c.ID, "content": text("once"), "client_id": "k1"}, &again)
	if !again.Duplicate || again.MessageID != first.MessageID {
		t.Fatalf("resend %+v, first %+v", again, first)
	}

	var ir protocol.InterruptResult
	w.ok("interrupt", map[string]any{"conversation_id": c.ID}, &ir)
	if ir.Interrupted {
		t.Fatal("interrupt of an idle conversation reported a turn")
	}
	w.ok("rename", map[string]any{"conversation_id": c.ID, "title": "renamed"}, &got)
	if got.Title != "renamed" {
		t.Fatalf("rename %+v", got)
	}
	var tools protocol.ToolsResult
	w.ok("list_tools", nil, &tools)
	if tools.Servers == nil {
		t.Fatal("list_tools: servers is null")
	}
	w.fail("get_conversation", map[string]any{"conversation_id": "nope"}, agent.CodeNotFound)
	w.fail("send", map[string]any{"conversation_id": "nope", "content": text("x")}, agent.CodeNotFound)
	w.fail("unsubscribe", map[string]any{"sub": "s999"}, agent.CodeNotFound)

	w.ok("delete", map[string]any{"conversation_id": c.ID}, nil)
	// The conversation stream ends with the deleted event.
	for {
		ev := decodeEvent(t, w.next().Event)
		if ev.Agent != nil && ev.Agent.Type == agent.AgentDeleted {
			break
		}
	}
	w.fail("get_conversation", map[string]any{"conversation_id": c.ID}, agent.CodeNotFound)
	w.ok("unsubscribe", map[string]any{"sub": sub.Sub}, nil)
	w.fail("unsubscribe", map[string]any{"sub": sub.Sub}, agent.CodeNotFound)
	w.close()
}

func TestWSBusyAndInterruptFromAnotherConnection(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	a, b := dialWS(t, ts), dialWS(t, ts)
	c := a.create("", false)
	sub := a.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	a.send(c.ID, "[[tokens=100000 delay=1ms]]")
	// Wait until the answer streams.
	for {
		ev := decodeEvent(t, a.next().Event)
		if ev.Event.Type == agent.EventAppendText {
			break
		}
	}
	b.fail("send", map[string]any{"conversation_id": c.ID, "content": text("x")}, agent.CodeBusy)
	var ir protocol.InterruptResult
	b.ok("interrupt", map[string]any{"conversation_id": c.ID}, &ir)
	if !ir.Interrupted {
		t.Fatal("interrupt found no turn")
	}
	evs := a.collect(sub.Sub, turnEnds(c.ID))
	var sawInterrupted bool
	for _, e := range evs {
		if decodeEvent(t, e).Event.Type == agent.EventInterrupted {
			sawInterrupted = true
		}
	}
	if !sawInterrupted {
		t.Fatal("no interrupted event before end")
	}
	a.close()
	b.close()
}

func TestWSTurnSurvivesDisconnect(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	a := dialWS(t, ts)
	c := a.create("", false)
	a.send(c.ID, "[[tokens=200 delay=1ms]]")
	a.close() // gone mid-turn

	b := dialWS(t, ts)
	defer b.close()
	sub := b.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID, "after": 0})
	evs := b.collect(sub.Sub, turnEnds(c.ID))
	last := decodeEvent(t, evs[len(evs)-2]).Event
	if last.Type != agent.EventMessage || last.Message.Type != agent.MessageAssistant || last.Message.Interrupted {
		t.Fatalf("turn did not finish: %+v", last)
	}
	if !strings.HasSuffix(last.Message.Content[0].Body, "t200") {
		t.Fatalf("answer %q", last.Message.Content[0].Body)
	}
}

func TestWSTwoClientsSeeIdenticalSequences(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	a, b := dialWS(t, ts), dialWS(t, ts)
	sa := a.subscribe(map[string]any{"stream": "all"})
	sb := b.subscribe(map[string]any{"stream": "all"})
	c := a.create("", false)
	b.send(c.ID, "[[tokens=300 delay=100us]]")
	ga := a.collect(sa.Sub, turnEnds(c.ID))
	gb := b.collect(sb.Sub, turnEnds(c.ID))
	sameEvents(t, "a vs b", ga, gb)
	sameEvents(t, "live vs replay", ga, replay(t, ts, map[string]any{"stream": "all"}))
	a.close()
	b.close()
}

func TestWSResumeMidTurn(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	a := dialWS(t, ts)
	sub := a.subscribe(map[string]any{"stream": "all", "after": 0})
	if f := a.next(); f.Type != protocol.FrameCaughtUp || f.Seq != 0 {
		t.Fatalf("first frame %+v, want caught_up at 0", f)
	}
	c := a.create("", false)
	a.send(c.ID, "[[tokens=2000 delay=200us]]")
	// Read part of the turn, then drop the connection without a close.
	var live []json.RawMessage
	for len(live) < 30 {
		f := a.next()
		if f.Type != protocol.FrameEvent || f.Sub != sub.Sub {
			t.Fatalf("unexpected %+v", f)
		}
		live = append(live, f.Event)
	}
	_ = a.c.CloseNow()
	last := seqOf(t, live[len(live)-1])

	b := dialWS(t, ts)
	defer b.close()
	sub2 := b.subscribe(map[string]any{"stream": "all", "after": last, "epoch": sub.Epoch})
	var resumed []json.RawMessage
	caughtUp := false
	for {
		f := b.next()
		if f.Type == protocol.FrameCaughtUp {
			if caughtUp {
				t.Fatal("two caught_up frames")
			}
			caughtUp = true
			continue
		}
		if f.Type != protocol.FrameEvent || f.Sub != sub2.Sub {
			t.Fatalf("unexpected %+v", f)
		}
		resumed = append(resumed, f.Event)
		if turnEnds(c.ID)(decodeEvent(t, f.Event)) {
			break
		}
	}
	if !caughtUp {
		t.Fatal("no caught_up before the end of the turn")
	}
	if got := seqOf(t, resumed[0]); got != last+1 {
		t.Fatalf("resumed at seq %d, want %d", got, last+1)
	}
	all := append(append([]json.RawMessage{}, live...), resumed...)
	sameEvents(t, "live+resumed vs replay", all, replay(t, ts, map[string]any{"stream": "all"}))
}

func TestWSSlowConsumerResyncsLosslessly(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	slow := dialSlowWS(t, ts)
	defer slow.close()
	sub := slow.subscribe(map[string]any{"stream": "all"})
	fast := dialWS(t, ts)
	defer fast.close()
	c := fast.create("", false)
	// Turns with large messages and many events run while slow reads
	// nothing, until the server has dropped slow's subscription.
	big := strings.Repeat("x", 16<<10)
	for i := 0; ts.Broker.Subscribers() > 0; i++ {
		if i == 40 {
			t.Fatal("the slow subscription was never dropped")
		}
		fast.send(c.ID, fmt.Sprintf("[[tokens=300 delay=200us]] %d %s", i, big))
		fsub := fast.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID, "after": 0})
		fast.collect(fsub.Sub, endCount(i+1))
		fast.ok("unsubscribe", map[string]any{"sub": fsub.Sub}, nil)
		fast.pending = nil
	}
	// Now slow reads: events, then a resync with the last delivered seq.
	var got []json.RawMessage
	var resync protocol.Frame
	for resync.Type == "" {
		f := slow.next()
		switch f.Type {
		case protocol.FrameEvent:
			got = append(got, f.Event)
		case protocol.FrameResync:
			resync = f
		default:
			t.Fatalf("unexpected %+v", f)
		}
	}
	if resync.Sub != sub.Sub || resync.Reason != "slow_consumer" {
		t.Fatalf("resync %+v", resync)
	}
	want := int64(-1)
	for _, e := range got {
		if s := seqOf(t, e); s > want {
			want = s
		}
	}
	if len(got) > 0 && resync.After != want {
		t.Fatalf("resync after %d, last delivered seq %d", resync.After, want)
	}
	// Resubscribing from there loses nothing and repeats nothing.
	sub2 := slow.subscribe(map[string]any{"stream": "all", "after": resync.After})
	for {
		f := slow.next()
		if f.Type == protocol.FrameCaughtUp {
			break
		}
		if f.Sub != sub2.Sub {
			t.Fatalf("unexpected %+v", f)
		}
		got = append(got, f.Event)
	}
	full := replay(t, ts, map[string]any{"stream": "all"})
	// slow subscribed live after nothing was stored: it sees the whole log.
	sameEvents(t, "slow consumer vs replay", got, full)
}

func TestWSManyClientsManyTurns(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	const clients, turns = 8, 4 // every client reads every turn of all: the fan-out grows as clients² × turns
	// A child process starved for seconds on a loaded machine must not
	// trip the server's write, pong or stall timers: the test checks
	// fan-out, not slow consumers.
	ts := newTestServer(t, withLoadedMachine())
	watch := dialWS(t, ts)
	defer watch.close()
	wsub := watch.subscribe(map[string]any{"stream": "all", "after": 0})
	if f := watch.next(); f.Type != protocol.FrameCaughtUp {
		t.Fatalf("first frame %+v", f)
	}
	var wg sync.WaitGroup
	streams := make([][]json.RawMessage, clients)
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := dialWS(t, ts)
			defer w.close()
			sub := w.subscribe(map[string]any{"stream": "all", "after": 0})
			c := w.create(fmt.Sprintf("c%d", i), false)
			for j := range turns {
				w.send(c.ID, fmt.Sprintf("[[tokens=%d]] client %d turn %d", 20+j, i, j))
				// Wait for this turn's end before the next send.
				for {
					f := w.next()
					if f.Type == protocol.FrameEvent && turnEnds(c.ID)(decodeEvent(t, f.Event)) {
						streams[i] = append(streams[i], f.Event)
						break
					}
					if f.Type == protocol.FrameEvent {
						streams[i] = append(streams[i], f.Event)
					}
				}
			}
			// Read on until every client's turns ended.
			ends := 0
			for _, e := range streams[i] {
				if ev := decodeEvent(t, e); ev.Event != nil && ev.Event.Type == agent.EventEnd {
					ends++
				}
			}
			for ends < clients*turns {
				f := w.next()
				if f.Type != protocol.FrameEvent || f.Sub != sub.Sub {
					errs <- fmt.Errorf("client %d: unexpected %+v", i, f)
					return
				}
				streams[i] = append(streams[i], f.Event)
				if ev := decodeEvent(t, f.Event); ev.Event != nil && ev.Event.Type == agent.EventEnd {
					ends++
				}
			}
		}()
	}
	watched := watch.collect(wsub.Sub, endCount(clients*turns))
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	full := replay(t, ts, map[string]any{"stream": "all"})
	sameEvents(t, "watcher vs replay", watched, full)
	for i, s := range streams {
		sameEvents(t, fmt.Sprintf("client %d vs replay", i), s, full)
	}
}

func TestWSTempConversationLiveOnly(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	sub := w.subscribe(map[string]any{"stream": "all"})
	c := w.create("scratch", true)
	if !c.Temp {
		t.Fatalf("created %+v", c)
	}
	sr := w.send(c.ID, "hi")
	if sr.Seq != 0 {
		t.Fatalf("temp send seq %d", sr.Seq)
	}
	evs := w.collect(sub.Sub, turnEnds(c.ID))
	if ev := decodeEvent(t, evs[0]); ev.Agent == nil || ev.Agent.Type != agent.AgentCreated {
		t.Fatalf("first event %s", evs[0])
	}
	for _, e := range evs {
		if s := seqOf(t, e); s != 0 {
			t.Fatalf("temp event with seq %d: %s", s, e)
		}
	}
	if got := replay(t, ts, map[string]any{"stream": "all"}); len(got) != 0 {
		t.Fatalf("temp events were replayed: %s", got[0])
	}
	// A conversation subscription to a temp conversation replays nothing
	// and goes live.
	csub := w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID, "after": 0})
	if f := w.next(); f.Type != protocol.FrameCaughtUp || f.Sub != csub.Sub {
		t.Fatalf("got %+v, want caught_up", f)
	}
}

func TestWSResyncOnEpochAndPrunedCursor(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("", false)
	w.send(c.ID, "hi")
	r := w.subscribe(map[string]any{"stream": "all", "after": 1, "epoch": "another-database"})
	if f := w.next(); f.Type != protocol.FrameResync || f.Sub != r.Sub || f.Reason != "epoch_mismatch" || f.After != 1 {
		t.Fatalf("got %+v, want resync epoch_mismatch", f)
	}
	if r.Epoch != ts.Store.Epoch() {
		t.Fatalf("epoch %q, want %q", r.Epoch, ts.Store.Epoch())
	}
	// Wait for the turn to be stored, then prune every event.
	testwait.For(t, "the turn's two messages to be stored", func() bool {
		var msgs protocol.MessagesResult
		w.ok("get_messages", map[string]any{"conversation_id": c.ID}, &msgs)
		return len(msgs.Messages) >= 2
	})
	testwait.For(t, "the turn to end", func() bool {
		var got agent.Conversation
		w.ok("get_conversation", map[string]any{"conversation_id": c.ID}, &got)
		return !got.Running
	})
	if _, err := ts.Store.Prune(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r = w.subscribe(map[string]any{"stream": "all", "after": 1})
	if f := w.next(); f.Type != protocol.FrameResync || f.Sub != r.Sub || f.Reason != "pruned" {
		t.Fatalf("got %+v, want resync pruned", f)
	}
	r = w.subscribe(map[string]any{"stream": "all", "after": r.Head + 100})
	if f := w.next(); f.Type != protocol.FrameResync || f.Reason != "cursor_ahead" {
		t.Fatalf("got %+v, want resync cursor_ahead", f)
	}
}

func TestWSBadFrames(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("", false)
	tests := []struct {
		name  string
		frame string
		id    string // "" when the reply has id null
		code  string
	}{
		{"not json", `hello`, "", "bad_request"},
		{"json array", `[1,2]`, "", "bad_request"},
		{"truncated", `{"op":"ping","id":"x"`, "", "bad_request"},
		{"no id", `{"op":"ping"}`, "", "bad_request"},
		{"numeric id", `{"op":"ping","id":7}`, "", "bad_request"},
		{"no op", `{"id":"a1"}`, "a1", "bad_request"},
		{"unknown op", `{"op":"launch","id":"a2"}`, "a2", "bad_request"},
		{"op wrong type", `{"op":5,"id":"a3"}`, "a3", "bad_request"},
		{"subscribe no stream", `{"op":"subscribe","id":"a4"}`, "a4", "bad_request"},
		{"subscribe bad stream", `{"op":"subscribe","id":"a5","stream":"everything"}`, "a5", "bad_request"},
		{"subscribe conversation without id", `{"op":"subscribe","id":"a6","stream":"conversation"}`, "a6", "bad_request"},
		{"subscribe after string", `{"op":"subscribe","id":"a7","stream":"all","after":"3"}`, "a7", "bad_request"},
		{"subscribe after negative", `{"op":"subscribe","id":"a8","stream":"all","after":-2}`, "a8", "bad_request"},
		{"subscribe unknown conversation", `{"op":"subscribe","id":"a9","stream":"conversation","conversation_id":"nope"}`, "a9", "not_found"},
		{"send no content", `{"op":"send","id":"b1","conversation_id":"` + c.ID + `"}`, "b1", "bad_request"},
		{"send content not list", `{"op":"send","id":"b2","conversation_id":"` + c.ID + `","content":"hi"}`, "b2", "bad_request"},
		{"send unknown content type", `{"op":"send","id":"b3","conversation_id":"` + c.ID + `","content":[{"type":"video"}]}`, "b3", "bad_request"},
		{"send empty text", `{"op":"send","id":"b4","conversation_id":"` + c.ID + `","content":[{"type":"text","body":"  "}]}`, "b4", "bad_request"},
		{"get without conversation", `{"op":"get_conversation","id":"b5"}`, "b5", "bad_request"},
		{"rename without title", `{"op":"rename","id":"b6","conversation_id":"` + c.ID + `"}`, "b6", "bad_request"},
		{"rename empty title", `{"op":"rename","id":"b7","conversation_id":"` + c.ID + `","title":" "}`, "b7", "bad_request"},
		{"list limit too big", `{"op":"list_conversations","id":"b8","limit":5000}`, "b8", "bad_request"},
		{"list offset negative", `{"op":"list_conversations","id":"b9","offset":-1}`, "b9", "bad_request"},
		{"list limit float", `{"op":"list_conversations","id":"c1","limit":1.5}`, "c1", "bad_request"},
		{"messages after negative", `{"op":"get_messages","id":"c2","conversation_id":"` + c.ID + `","after":-1}`, "c2", "bad_request"},
		{"temp wrong type", `{"op":"create_conversation","id":"c3","temp":"yes"}`, "c3", "bad_request"},
		{"unsubscribe without sub", `{"op":"unsubscribe","id":"c4"}`, "c4", "bad_request"},
		{"title too long", `{"op":"create_conversation","id":"c5","title":"` + strings.Repeat("a", 500) + `"}`, "c5", "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w.write(tt.frame)
			var f protocol.Frame
			for {
				var err error
				if f, err = w.readFrame(); err != nil {
					t.Fatal(err)
				}
				if f.Type == protocol.FrameReply {
					break
				}
			}
			gotID := ""
			if f.ID != nil {
				gotID = *f.ID
			}
			if f.OK || f.Error == nil || f.Error.Code != tt.code || f.Error.Message == "" || gotID != tt.id {
				t.Fatalf("reply %+v (id %q, error %+v), want error %s with id %q", f, gotID, f.Error, tt.code, tt.id)
			}
		})
	}
	// A binary frame gets a reply too, and the connection still works.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageBinary, []byte(`{"op":"ping","id":"bin"}`)); err != nil {
		t.Fatal(err)
	}
	if f, err := w.readFrame(); err != nil || f.ID != nil || f.Error == nil || f.Error.Code != "bad_request" {
		t.Fatalf("binary frame: %+v %v", f, err)
	}
	w.ok("ping", nil, nil)
	if n := ts.Broker.Subscribers(); n != 0 {
		t.Fatalf("%d subscriptions after bad frames", n)
	}
}

// tokenLimiter is a command limiter that never refills by itself: the
// test adds tokens, so what is limited does not depend on machine speed.
type tokenLimiter struct{ n atomic.Int64 }

func (l *tokenLimiter) Allow() bool {
	for {
		v := l.n.Load()
		if v <= 0 {
			return false
		}
		if l.n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// withLimiter gives every WebSocket connection the limiter l and the
// strike window the clock c.
func withLimiter(l *tokenLimiter, c *fakeClock) rigOption {
	return func(_ *agent.Config, s *server.Config) {
		s.NewCommandLimiter = func() server.CommandLimiter { return l }
		s.Clock = c.Now
	}
}

// pings writes n pings and reads their n replies, returning how many were
// rate limited.
func (w *wsClient) pings(n int) (limited int) {
	w.t.Helper()
	for i := range n {
		w.write(fmt.Sprintf(`{"op":"ping","id":"p%d"}`, i))
	}
	for range n {
		f, err := w.readFrame()
		if err != nil {
			w.t.Fatal(err)
		}
		if !f.OK && f.Error.Code == agent.CodeRateLimited {
			limited++
		}
	}
	return limited
}

func TestWSLimits(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	lim, clock := &tokenLimiter{}, &fakeClock{now: time.Unix(1e9, 0)}
	lim.n.Store(1 << 40)
	ts := newTestServer(t, withLimiter(lim, clock))
	w := dialWS(t, ts)
	defer w.close()
	for range server.WSMaxSubscriptions {
		w.subscribe(map[string]any{"stream": "agent"})
	}
	w.fail("subscribe", map[string]any{"stream": "agent"}, agent.CodeRateLimited)

	// Commands beyond the limiter's tokens are rate limited, the
	// connection lives on, and runs commands again once there are tokens.
	r := dialWS(t, ts)
	defer r.close()
	lim.n.Store(server.WSCommandBurst)
	if n := r.pings(server.WSCommandBurst + 20); n != 20 {
		t.Fatalf("%d commands rate limited, want the 20 beyond the tokens", n)
	}
	lim.n.Store(1) // the bucket refills
	r.ok("ping", nil, nil)
}

func TestWSRateLimitAbuseCloses1008(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	lim, clock := &tokenLimiter{}, &fakeClock{now: time.Unix(1e9, 0)}
	ts := newTestServer(t, withLimiter(lim, clock))
	w := dialWS(t, ts)

	// One strike short of the limit, the connection lives on; when the
	// window has passed, the count starts again.
	if n := w.pings(server.WSRateStrikes - 1); n != server.WSRateStrikes-1 {
		t.Fatalf("%d limited, want all", n)
	}
	clock.Advance(server.WSStrikeWindow)
	if n := w.pings(server.WSRateStrikes - 1); n != server.WSRateStrikes-1 {
		t.Fatalf("%d limited in the second window, want all (the connection must live on)", n)
	}
	// A command let through within the window does not forgive the
	// strikes: one more rate-limited command closes with 1008.
	lim.n.Store(1)
	w.ok("ping", nil, nil)
	clock.Advance(server.WSStrikeWindow - time.Millisecond)
	w.write(`{"op":"ping","id":"last"}`)
	_, err := w.readFrame()
	if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
		t.Fatalf("after %d strikes in a window: %v, want close 1008", server.WSRateStrikes, err)
	}
}

func TestWSOversizedFrameCloses1009(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	// Writing and reading 16 MB under -race on a loaded machine can take
	// longer than a few seconds, and a write whose context ends closes the
	// socket (no 1009 then): bound it as a broken build, not a slow one.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	big := make([]byte, server.WSReadLimit+1)
	_ = w.c.Write(ctx, websocket.MessageText, big)
	_, _, err := w.c.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusMessageTooBig {
		t.Fatalf("read after oversized frame: %v (status %v), want 1009", err, st)
	}
}

func TestWSShutdownCloses1012(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	w.subscribe(map[string]any{"stream": "all"})
	errc := make(chan error, 1)
	go func() {
		_, _, err := w.c.Read(context.Background())
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.App.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if st := websocket.CloseStatus(err); st != websocket.StatusServiceRestart {
		t.Fatalf("close: %v, want 1012", err)
	}
	if n := ts.Broker.Subscribers(); n != 0 {
		t.Fatalf("%d subscriptions left after shutdown", n)
	}
	// New connections are refused while shutting down.
	_, resp, err := websocket.Dial(ctx, ts.wsURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial during shutdown: %v %v", resp, err)
	}
}

func TestWSOriginAndHost(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	allow := func(_ *agent.Config, s *server.Config) { s.AllowedOrigins = []string{"app.example.com"} }
	ts := newTestServer(t, allow)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name   string
		header http.Header
		host   string
		status int // 0: the upgrade succeeds
	}{
		{"no origin (not a browser)", nil, "", 0},
		{"allowed origin pattern", http.Header{"Origin": {"https://app.example.com"}}, "", 0},
		{"own origin", http.Header{"Origin": {ts.URL}}, "", 0},
		{"foreign origin", http.Header{"Origin": {"https://evil.example"}}, "", http.StatusForbidden},
		{"null origin", http.Header{"Origin": {"null"}}, "", http.StatusForbidden},
		{"rebinding host", nil, "evil.example:80", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &websocket.DialOptions{HTTPHeader: tt.header}
			if tt.host != "" {
				opts.Host = tt.host
			}
			c, resp, err := websocket.Dial(ctx, ts.wsURL(), opts)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				_ = c.Close(websocket.StatusNormalClosure, "")
				return
			}
			if err == nil {
				_ = c.CloseNow()
				t.Fatal("upgrade succeeded")
			}
			if resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("dial: %v %v, want status %d", resp, err, tt.status)
			}
		})
	}
}

// TestStreamsRefusedAfterShutdown: once shutdown began, a new stream (SSE
// or WebSocket) is refused with unavailable instead of being counted while
// Shutdown waits for the streams it knows; many dials racing the shutdown
// leave the race detector quiet.
func TestStreamsRefusedAfterShutdown(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if c, _, err := websocket.Dial(ctx, ts.wsURL(), nil); err == nil {
				c.CloseNow()
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.App.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, path := range []string{"/agentik/events/all", "/agentik/ws"} {
		resp := ts.do(t, "GET", path, "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `"unavailable"`) {
			t.Errorf("GET %s after shutdown: %d %s, want 503 unavailable", path, resp.StatusCode, b)
		}
	}
}
