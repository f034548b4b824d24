package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/testwait"
)

func leakCheck(t *testing.T) {
	opts := []goleak.Option{
		goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"),
	}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// instance is agentik run by app.Run, the program cmd/agentik runs, on a
// database file and listening on addr; stop stops it as a signal stops
// the process.
type instance struct {
	cancel context.CancelFunc
	done   chan error // app.Run's result
}

func start(t *testing.T, dbPath, modelURL, addr string) *instance {
	t.Helper()
	var ln net.Listener
	testwait.ForErr(t, "the address to be free again", func() (err error) { // a restart reuses the port
		ln, err = net.Listen("tcp", addr)
		return err
	})
	env := map[string]string{"OPENAI_BASE_URL": modelURL, "OPENAI_MODEL": "fake"}
	// No continuations: a stop interrupts a running turn, which these
	// tests of the client's resume read (durable turns: cmd/agentik).
	s := app.Settings{Addr: addr, DB: "sqlite:" + dbPath, Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn, Listener: ln, TurnContinuations: -1}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- app.Run(ctx, s, func(k string) string { return env[k] }, io.Discard) }()
	return in
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	if err := <-in.done; err != nil {
		t.Error(err)
	}
}

// storedEvents is the event log of the database at dbPath, read once no
// server has it open.
func storedEvents(t *testing.T, dbPath string) []agent.AllEvent {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, agent.EventQuery{After: 0, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// turn sends a message and waits for its end on sub.
func turn(t *testing.T, c *client.Client, sub *client.Sub, convID, text string, got *[]client.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Send(ctx, convID, []agent.Content{agent.Text(text)}, agent.NewID())
	if err != nil {
		t.Fatal(err)
	}
	mine := false
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		*got = append(*got, ev)
		if e := ev.Event; e != nil && e.Type == agent.EventMessage && e.Message.ID == res.MessageID {
			mine = true
		}
		if mine && ev.ConversationID == convID && ev.Event != nil && ev.Event.Type == agent.EventEnd {
			return
		}
	}
}

func TestClientResumesAcrossServerRestart(t *testing.T) {
	leakCheck(t)
	_, modelURL := llmtest.NewHTTPServer(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	addr := freeAddr(t)
	a := start(t, db, modelURL, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{URL: "http://" + addr, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, client.Stream{Kind: client.StreamAll}, 0)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, "restart", false)
	if err != nil {
		t.Fatal(err)
	}
	var got []client.Event
	turn(t, c, sub, conv.ID, "[[tokens=50]] before", &got)

	// A turn is streaming when the server stops: it ends as interrupted.
	if _, err := c.Send(ctx, conv.ID, []agent.Content{agent.Text("[[tokens=100000 delay=1ms]]")}, agent.NewID()); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
		if ev.Event != nil && ev.Event.Type == agent.EventAppendText {
			break
		}
	}
	a.stop(t)
	b := start(t, db, modelURL, addr)
	turn(t, c, sub, conv.ID, "[[tokens=50]] after", &got)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	b.stop(t)

	// app.Run's shutdown stopped the streaming turn (interrupted), rather
	// than leaving it to the next start's recovery.
	interrupted := 0
	for _, ev := range got {
		if e := ev.Event; e != nil && e.Type == agent.EventInterrupted {
			interrupted++
		}
		if e := ev.Event; e != nil && e.Type == agent.EventError && e.Code == agent.CodeInterruptedByRestart {
			t.Errorf("the streaming turn was recovered at the restart, not stopped by the shutdown: %s", ev.JSON)
		}
	}
	if interrupted != 1 {
		t.Errorf("%d interrupted events, want 1 (the turn streaming at the shutdown)", interrupted)
	}

	// Exactly the stored log, in order, once.
	want := storedEvents(t, db)
	if len(got) != len(want) {
		t.Fatalf("got %d events, the log has %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].ID != want[i].ID {
			t.Fatalf("event %d: got seq %d id %s, want seq %d id %s", i, got[i].Seq, got[i].ID, want[i].Seq, want[i].ID)
		}
	}
}

func TestClientCommandsAndErrors(t *testing.T) {
	leakCheck(t)
	_, modelURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	in := start(t, filepath.Join(t.TempDir(), "agentik.db"), modelURL, addr)
	defer in.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Dial(ctx, client.Config{URL: "ftp://x"}); err == nil {
		t.Fatal("dial with an ftp URL succeeded")
	}
	c, err := client.Dial(ctx, client.Config{URL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, "x", false)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, client.Stream{Kind: client.StreamConversation, ConversationID: conv.ID}, -1)
	if err != nil {
		t.Fatal(err)
	}
	var got []client.Event
	turn(t, c, sub, conv.ID, "hello", &got)
	if got[0].Event.Type != agent.EventMessage || string(got[0].JSON) == "" {
		t.Fatalf("first event %+v", got[0])
	}
	ms, err := c.Messages(ctx, agent.MessageQuery{ConversationID: conv.ID})
	if err != nil || len(ms) != 2 || ms[1].Content[0].Body != "You said: hello" {
		t.Fatalf("messages %+v %v", ms, err)
	}
	list, err := c.Conversations(ctx, 0, 10)
	if err != nil || list.Total != 1 {
		t.Fatalf("list %+v %v", list, err)
	}
	if _, err := c.Rename(ctx, conv.ID, "y"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Interrupt(ctx, conv.ID); err != nil || ok {
		t.Fatalf("interrupt idle: %v %v", ok, err)
	}
	if _, err := c.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Conversation(ctx, "nope")
	if agent.ErrorCode(err) != agent.CodeNotFound {
		t.Fatalf("unknown conversation: %v", err)
	}
	if err := c.Delete(ctx, conv.ID); err != nil {
		t.Fatal(err)
	}
	// A resync the client cannot repair ends the subscription.
	ahead, err := c.Subscribe(ctx, client.Stream{Kind: client.StreamAll}, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ahead.Next(ctx)
	var re *client.ResyncError
	if !errors.As(err, &re) || re.Reason != "cursor_ahead" {
		t.Fatalf("next after a cursor ahead of the log: %v", err)
	}
}
