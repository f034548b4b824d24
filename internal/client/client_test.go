package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
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

// instance is one server process's worth of wiring on a database file,
// listening on addr; stop shuts it down like a process exit.
type instance struct {
	a      *app.App
	st     *store.Store
	runner *agent.Runner
	app    *server.Server
	hs     *http.Server
	done   chan error
}

func start(t *testing.T, dbPath, modelURL, addr string) *instance {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DB: "sqlite:" + dbPath})
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.New(llm.Config{BaseURL: modelURL, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), agent.Config{Model: m}, server.Config{}); err != nil {
		t.Fatal(err)
	}
	st, r, app := a.Store, a.Runner, a.Server
	var ln net.Listener
	testwait.ForErr(t, "the address to be free again", func() (err error) { // a restart reuses the port
		ln, err = net.Listen("tcp", addr)
		return err
	})
	in := &instance{a: a, st: st, runner: r, app: app, hs: &http.Server{Handler: app}, done: make(chan error, 1)}
	go func() { in.done <- in.hs.Serve(ln) }()
	return in
}

func (in *instance) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := in.runner.Close(ctx); err != nil {
		t.Error(err)
	}
	if err := in.app.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := in.hs.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	<-in.done
	if err := in.a.Close(ctx); err != nil {
		t.Error(err)
	}
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
	defer b.stop(t)
	turn(t, c, sub, conv.ID, "[[tokens=50]] after", &got)

	// Exactly the stored log, in order, once.
	want, err := b.st.Events(ctx, agent.EventQuery{After: 0, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, the log has %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].ID != want[i].ID {
			t.Fatalf("event %d: got seq %d id %s, want seq %d id %s", i, got[i].Seq, got[i].ID, want[i].Seq, want[i].ID)
		}
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
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
