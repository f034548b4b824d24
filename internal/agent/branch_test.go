package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// during subscribes to the conversation, runs start and returns the
// turn's events up to its end.
func (g *rig) during(c agent.Conversation, start func(ctx context.Context) error) []agent.Event {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		g.t.Fatal(err)
	}
	defer sub.Close()
	if err := start(ctx); err != nil {
		g.t.Fatal(err)
	}
	return untilEnd(g.t, ctx, sub)
}

// lastPrompt renders the model's last request: role:text|….
func lastPrompt(g *rig) string {
	reqs := g.fake.Requests()
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages[1:] { // after the system prompt
		out = append(out, m.Role+":"+m.Content)
	}
	return strings.Join(out, "|")
}

// rendered renders history: text|… with ‹i/n› after a message with siblings.
func rendered(ms []agent.Message) string {
	var out []string
	for _, m := range ms {
		s := agent.MessageText(m)
		if m.Type == agent.MessageError {
			s = "error"
		}
		if m.Siblings != nil {
			s += fmt.Sprintf("‹%d/%d›", m.Siblings.Index, m.Siblings.Count)
		}
		out = append(out, s)
	}
	return strings.Join(out, "|")
}

func find(t *testing.T, ms []agent.Message, text string) agent.Message {
	t.Helper()
	for _, m := range ms {
		if agent.MessageText(m) == text {
			return m
		}
	}
	t.Fatalf("no message %q in %s", text, rendered(ms))
	return agent.Message{}
}

func TestBranches(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	ctx := context.Background()
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: "a1"})
	g.turn(c, "q1")
	g.fake.Enqueue(llmtest.Reply{Text: "a2"})
	g.turn(c, "q2")
	q2 := find(t, g.history(c), "q2")

	// Edit: a sibling of q2, answered from the path before it.
	g.fake.Enqueue(llmtest.Reply{Text: "a2b"})
	g.during(c, func(ctx context.Context) error {
		_, err := g.r.Edit(ctx, c.ID, q2.ID, []agent.Content{agent.Text("q2 edited")})
		return err
	})
	if got, want := lastPrompt(g), "user:q1|assistant:a1|user:q2 edited"; got != want {
		t.Fatalf("request after edit\n got %s\nwant %s", got, want)
	}
	if got, want := rendered(g.history(c)), "q1|a1|q2 edited‹2/2›|a2b"; got != want {
		t.Fatalf("active path after edit\n got %s\nwant %s", got, want)
	}
	all, err := g.cs.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, All: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rendered(all), "q1|a1|q2‹1/2›|a2|q2 edited‹2/2›|a2b"; got != want {
		t.Fatalf("branch=all\n got %s\nwant %s", got, want)
	}
	if e := find(t, all, "q2 edited"); e.ParentID != find(t, all, "a1").ID {
		t.Errorf("the edited copy follows %q, not a1", e.ParentID)
	}

	// Switching back restores the old path, live on the agent stream.
	asub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAgent}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer asub.Close()
	sw, err := g.r.SwitchBranch(ctx, c.ID, q2.ID)
	if err != nil {
		t.Fatal(err)
	}
	a2 := find(t, all, "a2")
	if sw.Head != a2.ID {
		t.Errorf("head %q after the switch, want a2 %q", sw.Head, a2.ID)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		it, err := asub.Next(wctx)
		if err != nil {
			t.Fatalf("no updated event: %v", err)
		}
		if it.CaughtUp || it.Event.Kind != agent.KindAgent {
			continue
		}
		ev, err := it.Event.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.Agent; a != nil && a.Type == agent.AgentUpdated {
			if a.ConversationID != c.ID || a.Head != a2.ID {
				t.Errorf("updated %+v", a)
			}
			break
		}
	}
	if got, want := rendered(g.history(c)), "q1|a1|q2‹1/2›|a2"; got != want {
		t.Fatalf("active path after switching back\n got %s\nwant %s", got, want)
	}
	g.fake.Enqueue(llmtest.Reply{Text: "a3"})
	g.turn(c, "q3")
	if got, want := lastPrompt(g), "user:q1|assistant:a1|user:q2|assistant:a2|user:q3"; got != want {
		t.Fatalf("request on the old path\n got %s\nwant %s", got, want)
	}

	// After a restart the same; regenerate answers q3 again.
	g.close()
	g.open()
	if got, want := rendered(g.history(c)), "q1|a1|q2‹1/2›|a2|q3|a3"; got != want {
		t.Fatalf("active path after restart\n got %s\nwant %s", got, want)
	}
	g.fake.Enqueue(llmtest.Reply{Text: "a3b"})
	g.during(c, func(ctx context.Context) error {
		res, err := g.r.Regenerate(ctx, c.ID, "")
		if err == nil && res.MessageID != find(t, g.history(c), "q3").ID {
			t.Errorf("regenerate answered message %q, not q3", res.MessageID)
		}
		return err
	})
	if got, want := lastPrompt(g), "user:q1|assistant:a1|user:q2|assistant:a2|user:q3"; got != want {
		t.Fatalf("request of the regenerate\n got %s\nwant %s", got, want)
	}
	if got, want := rendered(g.history(c)), "q1|a1|q2‹1/2›|a2|q3|a3b‹2/2›"; got != want {
		t.Fatalf("active path after regenerate\n got %s\nwant %s", got, want)
	}
	// Switching to the edited branch again; its next request follows it.
	if _, err := g.r.SwitchBranch(ctx, c.ID, find(t, all, "q2 edited").ID); err != nil {
		t.Fatal(err)
	}
	g.fake.Enqueue(llmtest.Reply{Text: "a4"})
	g.turn(c, "q4")
	if got, want := lastPrompt(g), "user:q1|assistant:a1|user:q2 edited|assistant:a2b|user:q4"; got != want {
		t.Fatalf("request on the edited branch\n got %s\nwant %s", got, want)
	}
}

// An edit of the first message makes a second first message.
func TestEditFirstMessage(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: "a1"})
	g.turn(c, "q1")
	g.fake.Enqueue(llmtest.Reply{Text: "b1"})
	g.during(c, func(ctx context.Context) error {
		_, err := g.r.Edit(ctx, c.ID, find(t, g.history(c), "q1").ID, []agent.Content{agent.Text("p1")})
		return err
	})
	if got, want := lastPrompt(g), "user:p1"; got != want {
		t.Fatalf("request\n got %s\nwant %s", got, want)
	}
	if got, want := rendered(g.history(c)), "p1‹2/2›|b1"; got != want {
		t.Fatalf("path\n got %s\nwant %s", got, want)
	}
}

// A retried failed try is no version to page back to; an error that is
// still the last try is one, beside the answer it failed to replace.
func TestRetryIsNoVersion(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	ctx := context.Background()
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Status: 401, ErrorMessage: "Incorrect API key provided"})
	g.turn(c, "q1")
	var failed agent.Message
	for _, m := range g.history(c) {
		if m.Type == agent.MessageError {
			failed = m
		}
	}
	if failed.ID == "" {
		t.Fatalf("no error after a refused key: %s", rendered(g.history(c)))
	}
	g.fake.Enqueue(llmtest.Reply{Text: "a1"})
	g.during(c, func(ctx context.Context) error {
		_, err := g.r.Regenerate(ctx, c.ID, failed.ID)
		return err
	})
	all, err := g.cs.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, All: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rendered(all), "q1|error|a1"; got != want {
		t.Fatalf("branch=all after a retry\n got %s\nwant %s", got, want)
	}

	g.fake.Enqueue(llmtest.Reply{Status: 401, ErrorMessage: "key revoked"})
	g.during(c, func(ctx context.Context) error {
		_, err := g.r.Regenerate(ctx, c.ID, find(t, all, "a1").ID)
		return err
	})
	if got, want := rendered(g.history(c)), "q1|error‹2/2›"; got != want {
		t.Fatalf("path after a failed regenerate\n got %s\nwant %s", got, want)
	}
	all, err = g.cs.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, All: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rendered(all), "q1|error|a1‹1/2›|error‹2/2›"; got != want {
		t.Fatalf("branch=all after a failed regenerate\n got %s\nwant %s", got, want)
	}
}

func TestBranchBadInput(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	ctx := context.Background()
	c := g.create(false)
	if _, err := g.r.Regenerate(ctx, c.ID, ""); !errors.Is(err, agent.ErrBadRequest) {
		t.Errorf("regenerate with no answer: %v", err)
	}
	g.fake.Enqueue(llmtest.Reply{Text: "a1"})
	g.turn(c, "q1")
	h := g.history(c)
	q1, a1 := find(t, h, "q1"), find(t, h, "a1")
	text := []agent.Content{agent.Text("x")}
	for name, err := range map[string]error{
		"edit of an answer":         second(g.r.Edit(ctx, c.ID, a1.ID, text)),
		"regenerate of a question":  second(g.r.Regenerate(ctx, c.ID, q1.ID)),
		"edit with empty content":   second(g.r.Edit(ctx, c.ID, q1.ID, nil)),
		"temp conversation":         second(g.r.Regenerate(ctx, g.create(true).ID, "")),
		"edit of an unknown id":     second(g.r.Edit(ctx, c.ID, "nope", text)),
		"regenerate of unknown id":  second(g.r.Regenerate(ctx, c.ID, "nope")),
		"switch to an unknown id":   second(g.r.SwitchBranch(ctx, c.ID, "nope")),
		"switch to a huge unknown":  second(g.r.SwitchBranch(ctx, c.ID, strings.Repeat("x", 20000))),
		"switch in an unknown conv": second(g.r.SwitchBranch(ctx, "nope", q1.ID)),
	} {
		want := agent.ErrBadRequest
		if strings.Contains(name, "unknown") {
			want = agent.ErrNotFound
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %s", name, err, want.Code)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("%s: a %d-byte error message", name, len(err.Error()))
		}
	}
	// While a turn runs: busy, and nothing moves.
	g.startTurnInStore(c)
	for name, err := range map[string]error{
		"edit":       second(g.r.Edit(ctx, c.ID, q1.ID, text)),
		"regenerate": second(g.r.Regenerate(ctx, c.ID, a1.ID)),
		"switch":     second(g.r.SwitchBranch(ctx, c.ID, q1.ID)),
	} {
		if !errors.Is(err, agent.ErrBusy) {
			t.Errorf("%s while running: %v, want busy", name, err)
		}
	}
	if got, want := rendered(g.history(c)), "q1|a1|hi"; got != want {
		t.Errorf("history changed: %s", got)
	}
}

func second[T any](_ T, err error) error { return err }

// echoScript answers "re:" and the last user text; a summary call gets
// "SUMMARY".
func echoScript(req llmtest.Request) llmtest.Reply {
	if req.MaxTokens > 0 {
		return llmtest.Reply{Text: "SUMMARY"}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return llmtest.Reply{Text: "re:" + req.Messages[i].Content}
		}
	}
	return llmtest.Reply{Text: "re:"}
}

// A switch only marks working memory stale; the next turn rebuilds it for
// the active path. The stale memory is never used: not after a compaction
// on the branch left (its summary is not on the other path), not after a
// restart, not after a turn that died before it wrote memory (recovery
// ends it and the mark holds). The turn that rebuilt it writes it whole.
func TestBranchMemoryRebuiltByTheNextTurn(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Continuations = -1 }, llmtest.WithScript(echoScript))
	ctx := context.Background()
	c := g.create(false)
	for _, q := range []string{"q1", "q2", "q3"} {
		noError(t, g.turn(c, q))
	}
	if res, err := g.r.Compact(ctx, c.ID); err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	q2 := find(t, g.history(c), "q2")

	// A branch from before the summary: its request has no summary.
	g.during(c, func(ctx context.Context) error {
		_, err := g.r.Edit(ctx, c.ID, q2.ID, []agent.Content{agent.Text("q2b")})
		return err
	})
	reqs := g.fake.Requests()
	if sys := reqs[len(reqs)-1].Messages[0].Content; strings.Contains(sys, "SUMMARY") {
		t.Errorf("the edited branch's request carries the other branch's summary: %q", sys)
	}
	if got, want := lastPrompt(g), "user:q1|assistant:re:q1|user:q2b"; got != want {
		t.Fatalf("request on the edited branch\n got %s\nwant %s", got, want)
	}

	// Back to the compacted branch (its leaf is the summary): memory is
	// stale, and the store does not hand it out.
	if _, err := g.r.SwitchBranch(ctx, c.ID, q2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.st.Memory(ctx, c.ID); !errors.Is(err, agent.ErrStaleMemory) {
		t.Fatalf("memory after the switch: %v, want stale", err)
	}
	// A turn that died with its process before writing memory; recovery
	// ends it at the restart. Memory is still stale.
	g.startTurnInStore(c)
	g.close()
	g.open()
	if h := g.history(c); h[len(h)-1].Code != agent.CodeInterruptedByRestart {
		t.Fatalf("not recovered: %s", rendered(h))
	}
	if _, err := g.st.Memory(ctx, c.ID); !errors.Is(err, agent.ErrStaleMemory) {
		t.Fatalf("memory after the restart: %v, want stale", err)
	}
	noError(t, g.turn(c, "q4"))
	path := "user:q1|assistant:re:q1|user:q2|assistant:re:q2|user:q3|assistant:re:q3|user:hi|user:q4"
	if got := lastPrompt(g); got != path {
		t.Fatalf("request after the switch back\n got %s\nwant %s", got, path)
	}
	// The turn wrote memory whole: the next one reads it as it is.
	mem, err := g.st.Memory(ctx, c.ID)
	if err != nil || len(mem) != 10 || mem[0].Role != agent.RoleSystem || mem[9].Role != agent.RoleAssistant || mem[9].Content[0].Body != "re:q4" {
		t.Fatalf("memory after the turn: %d entries, %v", len(mem), err)
	}
	noError(t, g.turn(c, "q5"))
	if got, want := lastPrompt(g), path+"|assistant:re:q4|user:q5"; got != want {
		t.Fatalf("request of the turn after\n got %s\nwant %s", got, want)
	}
}

// TestTempBranches: a temp conversation branches, switches back and
// compacts as a stored one does: its store is the same code over a
// database of its own (store.OpenTemp), and keeps nothing in the stored
// database.
func TestTempBranches(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, nil, llmtest.WithScript(contextScript))
	ctx := context.Background()
	c := g.create(true)
	noError(t, g.turn(c, "q1"))
	noError(t, g.turn(c, "q2"))
	h := g.history(c)
	q2, a1 := find(t, h, "q2"), h[1]
	g.during(c, func(ctx context.Context) error {
		_, err := g.r.Edit(ctx, c.ID, q2.ID, []agent.Content{agent.Text("q2 edited")})
		return err
	})
	if got := rendered(g.history(c)); !strings.HasPrefix(got, "q1|"+agent.MessageText(a1)+"|q2 edited‹2/2›|") {
		t.Fatalf("temp path after edit: %s", got)
	}
	if _, err := g.r.SwitchBranch(ctx, c.ID, q2.ID); err != nil {
		t.Fatal(err)
	}
	if got := rendered(g.history(c)); !strings.Contains(got, "|q2‹1/2›|") {
		t.Fatalf("temp path after switching back: %s", got)
	}
	noError(t, g.turn(c, "q3"))
	res, err := g.r.Compact(ctx, c.ID)
	if err != nil || !res.Compacted || res.Message == nil {
		t.Fatalf("compact a temp conversation: %+v, %v", res, err)
	}
	if res.Message.Seq != 0 {
		t.Errorf("temp summary seq %d, want 0", res.Message.Seq)
	}
	if hist := g.history(c); hist[len(hist)-1].Type != agent.MessageSummary {
		t.Errorf("temp history ends with %s, want the summary", hist[len(hist)-1].Type)
	}
	if !g.r.IsTemp(c.ID) {
		t.Fatal("no longer temp")
	}
	if _, err := g.st.Conversation(ctx, c.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("temp conversation in the stored database: %v", err)
	}
}
