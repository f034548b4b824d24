package relay

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// types is a projection that writes each event's type, asks on
// approval_request and ends on end.
type types struct {
	asked bool
	done  bool
}

func (p *types) Event(e *agent.Encoded) ([]Frame, bool) {
	ev, ok := Event(e)
	if !ok {
		return nil, false
	}
	p.asked = p.asked || ev.Type == agent.EventApprovalRequest
	p.done = ev.Type == agent.EventEnd
	return []Frame{Data([]byte(ev.Type))}, p.done
}
func (p *types) Asking() bool { return p.asked && !p.done }
func (p *types) Parked(waiting []string) ([]Frame, bool) {
	if len(waiting) == 0 {
		return nil, false
	}
	p.done = true
	return []Frame{Data([]byte("parked:" + strings.Join(waiting, ",")))}, true
}

// sink records each flush as the frames and comments it wrote, joined by
// spaces, and sends it on flushed (when not nil).
type sink struct {
	mu      sync.Mutex
	buf     []string
	flushes []string
	flushed chan string
	fail    bool // every flush fails: the client is gone
}

func (s *sink) Frame(f Frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, string(f.Data))
}
func (s *sink) Comment(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, ": "+text)
}
func (s *sink) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.buf {
		n += len(b) + 1
	}
	return n
}
func (s *sink) Flush() error {
	s.mu.Lock()
	if s.fail {
		s.mu.Unlock()
		return errors.New("broken pipe")
	}
	w := strings.Join(s.buf, " ")
	s.buf = nil
	s.flushes = append(s.flushes, w)
	s.mu.Unlock()
	if s.flushed != nil {
		s.flushed <- w
	}
	return nil
}
func (s *sink) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.flushes, " | ")
}

// fixture is a broker with a subscription to conversation c.
type fixture struct {
	b   *broker.Broker
	sub *Sub
	ctx context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	b := broker.New(nil, nil)
	sub, err := Conversation(ctx, b, "c", -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return &fixture{b: b, sub: sub, ctx: ctx}
}

func (f *fixture) publish(types ...string) {
	for _, typ := range types {
		f.b.Publish(agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: typ}})
	}
}

// run runs fo in a goroutine and returns its result's channel.
func (f *fixture) run(fo Follow, p Projection) chan error {
	done := make(chan error, 1)
	go func() { done <- fo.Run(f.ctx, f.sub, p) }()
	return done
}

// recv is the next flush s wrote.
func (s *sink) recv(t *testing.T) string {
	t.Helper()
	select {
	case w := <-s.flushed:
		return w
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing written; so far %q", s.all())
		return ""
	}
}

func wait(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the follow did not end")
		return nil
	}
}

// TestFollowDone: a stream ends once its projection is done, or once its
// turn parks on the calls it asked about, then writes its last frames; what
// was ready together went out in one flush.
func TestFollowDone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		waiting []string
		evs     []string
		want    string
	}{
		{"a turn", nil, []string{agent.EventAppendText, agent.EventEnd, agent.EventAppendText}, "append_text end [DONE]"},
		{"a parked turn", []string{"c1"}, []string{agent.EventToolCall, agent.EventApprovalRequest}, "tool_call approval_request | parked:c1 [DONE]"},
	} {
		f := newFixture(t)
		f.publish(tc.evs...)
		s := &sink{}
		err := wait(t, f.run(Follow{Sink: s, Last: []Frame{Data([]byte("[DONE]"))},
			Waiting: func(context.Context) ([]string, error) { return tc.waiting, nil }}, &types{}))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if got := s.all(); got != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFollowBatches: events ready together go out in one flush; a batch
// is cut at batchBytes.
func TestFollowBatches(t *testing.T) {
	f := newFixture(t)
	f.publish(agent.EventAppendText, agent.EventAppendText, agent.EventAppendText, agent.EventEnd)
	s := &sink{}
	if err := wait(t, f.run(Follow{Sink: s}, &types{})); err != nil {
		t.Fatal(err)
	}
	if got, want := s.all(), "append_text append_text append_text end"; got != want {
		t.Errorf("wrote %q, want one flush %q", got, want)
	}

	f = newFixture(t)
	big := strings.Repeat("x", batchBytes/2)
	f.publish(agent.EventAppendText, agent.EventAppendText, agent.EventAppendText, agent.EventEnd)
	s = &sink{}
	p := ProjectionFunc(func(e *agent.Encoded) ([]Frame, bool) {
		ev, _ := Event(e)
		return []Frame{Data([]byte(big))}, ev.Type == agent.EventEnd
	})
	if err := wait(t, f.run(Follow{Sink: s}, p)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.flushes); n != 2 {
		t.Errorf("%d flushes of 4 frames of half a batch, want 2", n)
	}
}

// ticker is an injected heartbeat ticker.
func ticker(c chan time.Time) func(time.Duration) (<-chan time.Time, func()) {
	return func(time.Duration) (<-chan time.Time, func()) { return c, func() {} }
}

// TestFollowHeartbeat: a tick after which nothing was written writes a
// comment; a tick after a write does not.
func TestFollowHeartbeat(t *testing.T) {
	f := newFixture(t)
	tick := make(chan time.Time)
	s := &sink{flushed: make(chan string, 10)}
	done := f.run(Follow{Sink: s, Heartbeat: time.Hour, Ticker: ticker(tick), Comment: "beat"}, &types{})
	tick <- time.Time{} // idle since the start
	if got := s.recv(t); got != ": beat" {
		t.Fatalf("an idle stream wrote %q, want the heartbeat", got)
	}
	f.publish(agent.EventAppendText)
	if got := s.recv(t); got != "append_text" {
		t.Fatalf("wrote %q", got)
	}
	tick <- time.Time{} // written since the last tick: no heartbeat
	tick <- time.Time{} // idle for a whole interval: a heartbeat
	if got := s.recv(t); got != ": beat" {
		t.Fatalf("wrote %q, want the heartbeat", got)
	}
	f.publish(agent.EventEnd)
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if got, want := s.all(), ": beat | append_text | : beat | end"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

// TestFollowShutdown: shutdown ends a stream, after writing what was
// ready; a stream ends at once when shutdown began before it.
func TestFollowShutdown(t *testing.T) {
	f := newFixture(t)
	closing := make(chan struct{})
	s := &sink{flushed: make(chan string, 10)}
	done := f.run(Follow{Sink: s, Closing: closing}, &types{})
	f.publish(agent.EventAppendText)
	s.recv(t)
	close(closing)
	if err := wait(t, done); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("a stream ended by shutdown: %v, want ErrShuttingDown", err)
	}

	f = newFixture(t)
	f.publish(agent.EventAppendText, agent.EventEnd)
	s = &sink{}
	if err := wait(t, f.run(Follow{Sink: s, Closing: closing}, &types{})); err != nil {
		t.Errorf("a turn that ended before the shutdown: %v", err)
	}
	if got, want := s.all(), "append_text end"; got != want {
		t.Errorf("wrote %q at shutdown, want what was ready %q", got, want)
	}
}

// TestFollowLeft: the client's leaving (its request's end, or a failed
// write) ends the stream with ErrLeft.
func TestFollowLeft(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(f.ctx)
	f.ctx = ctx
	s := &sink{flushed: make(chan string, 10)}
	done := f.run(Follow{Sink: s}, &types{})
	f.publish(agent.EventAppendText)
	s.recv(t)
	cancel()
	if err := wait(t, done); !errors.Is(err, ErrLeft) {
		t.Errorf("a client that left: %v, want ErrLeft", err)
	}

	f = newFixture(t)
	f.publish(agent.EventAppendText)
	if err := wait(t, f.run(Follow{Sink: &sink{fail: true}}, &types{})); !errors.Is(err, ErrLeft) {
		t.Errorf("a failed write: %v, want ErrLeft", err)
	}
}

// TestFollowUntilCaughtUp: a replay ends once the stored events are
// delivered, its subscription still open.
func TestFollowUntilCaughtUp(t *testing.T) {
	src := &stored{}
	for i := int64(1); i <= 3; i++ {
		src.evs = append(src.evs, encode(t, i, agent.EventAppendText))
	}
	b := broker.New(src, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := Conversation(ctx, b, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s := &sink{}
	if err := (Follow{Sink: s, UntilCaughtUp: true}).Run(ctx, sub, &types{}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.all(), "append_text append_text append_text"; got != want {
		t.Errorf("replayed %q, want %q", got, want)
	}
	if sub.Head() != 3 {
		t.Errorf("head %d, want 3", sub.Head())
	}
}

// TestFollowCut: a subscription that fails ends the stream with the
// protocol's frame for it, and its error.
func TestFollowCut(t *testing.T) {
	f := newFixture(t)
	for range broker.QueueLimit + 10 { // more than a subscriber may have waiting
		f.publish(agent.EventAppendText)
	}
	s := &sink{}
	err := wait(t, f.run(Follow{Sink: s, Cut: func(err error) []Frame { return []Frame{Data([]byte("behind"))} }}, &types{}))
	var re *broker.ResyncError
	if !errors.As(err, &re) || re.Reason != broker.ReasonSlowConsumer {
		t.Fatalf("a dropped subscription: %v", err)
	}
	if !strings.HasSuffix(s.all(), "behind") {
		t.Errorf("wrote %q, want the cut frame last", s.all()[max(0, len(s.all())-100):])
	}
}

// stored is a Source of a few stored events of conversation c.
type stored struct{ evs []agent.Encoded }

func (s *stored) Bounds(context.Context) (int64, int64, error) {
	return 0, s.evs[len(s.evs)-1].Seq, nil
}
func (s *stored) ConversationPruned(context.Context, string) (int64, error) { return 0, nil }
func (s *stored) Epoch() string                                             { return "e" }
func (s *stored) EncodedEvents(_ context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	var out []agent.Encoded
	for _, e := range s.evs {
		if e.Seq > q.After {
			out = append(out, e)
		}
	}
	return out, nil
}

func encode(t *testing.T, seq int64, typ string) agent.Encoded {
	t.Helper()
	e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: seq, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// held is a sink whose first flush waits for release: its stream falls
// behind meanwhile.
type held struct {
	*sink
	first   chan struct{} // closed at the first flush
	release chan struct{}
	once    sync.Once
}

func (h *held) Flush() error {
	h.once.Do(func() { close(h.first); <-h.release })
	return h.sink.Flush()
}

// TestFollowResume: with Resume, a subscription dropped for falling
// behind goes on from its last event, replayed from the store: nothing
// is lost and nothing cut.
func TestFollowResume(t *testing.T) {
	n := int64(broker.QueueLimit + 10)
	src := &stored{}
	for i := int64(1); i < n; i++ {
		src.evs = append(src.evs, encode(t, i, agent.EventAppendText))
	}
	src.evs = append(src.evs, encode(t, n, agent.EventEnd))
	b := broker.New(src, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := Conversation(ctx, b, "c", -1)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s := &held{sink: &sink{}, first: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	p := &types{}
	go func() {
		done <- Follow{Sink: s, Resume: true, Cut: func(error) []Frame { return []Frame{Data([]byte("cut"))} }}.Run(ctx, sub, p)
	}()
	b.PublishEncoded(src.evs[:1])
	<-s.first
	b.PublishEncoded(src.evs[1:]) // more than the subscription may queue: dropped
	close(s.release)
	if err := wait(t, done); err != nil {
		t.Fatalf("a resumed stream: %v", err)
	}
	got := strings.Fields(strings.ReplaceAll(s.all(), "|", ""))
	if int64(len(got)) != n || got[len(got)-1] != agent.EventEnd {
		t.Errorf("wrote %d frames ending %q, want %d ending with end", len(got), got[len(got)-1], n)
	}
}
