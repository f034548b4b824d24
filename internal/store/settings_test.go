package store

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentik/agentik/internal/agent"
)

// TestSettings: a conversation's model, system prompt and params are
// stored at create, changed by an updated event (only the fields it
// carries), and read back.
func TestSettings(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		temp, topP, maxTok := 0.3, 0.9, 64
		rec := createdRec("c1", "")
		rec.Conversation.Model, rec.Conversation.SystemPrompt = "a/m1", "be brief"
		rec.Conversation.Params = &agent.Params{Temperature: &temp}
		mustAppend(t, s, rec)
		got, err := s.Conversation(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Model != "a/m1" || got.SystemPrompt != "be brief" || got.Params == nil || *got.Params.Temperature != 0.3 || got.UserTitled {
			t.Fatalf("created: %+v", got)
		}

		model := "b/m2"
		up := agent.AllEvent{Kind: agent.KindAgent, ID: "ev-" + newID(), Agent: &agent.AgentEvent{Type: agent.AgentUpdated, ConversationID: "c1",
			Model: &model, Params: &agent.Params{TopP: &topP, MaxTokens: &maxTok}}}
		mustAppend(t, s, &agent.Record{Event: up})
		got, err = s.Conversation(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		want := &agent.Params{TopP: &topP, MaxTokens: &maxTok}
		if got.Model != "b/m2" || got.SystemPrompt != "be brief" || !cmp.Equal(got.Params, want) {
			t.Fatalf("updated: model %q prompt %q params %+v", got.Model, got.SystemPrompt, got.Params)
		}

		// Empty params clear them.
		up.ID, up.Agent.Model, up.Agent.Params = "ev-"+newID(), nil, &agent.Params{}
		mustAppend(t, s, &agent.Record{Event: up})
		if got, _ = s.Conversation(t.Context(), "c1"); got.Params != nil || got.Model != "b/m2" {
			t.Fatalf("cleared: %+v", got)
		}
	})
}

// TestAutoTitleNeverOverwritesUser: a title agentik writes applies while
// nobody named the conversation, and fails with ErrUserTitled, writing
// nothing, once a user did.
func TestAutoTitleNeverOverwritesUser(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("c1", ""))
		auto := renamedRec("c1", "by the model")
		auto.AutoTitle = true
		mustAppend(t, s, auto)
		if got, _ := s.Conversation(t.Context(), "c1"); got.Title != "by the model" || got.UserTitled {
			t.Fatalf("after the auto title: %+v", got)
		}
		mustAppend(t, s, renamedRec("c1", "mine"))
		auto = renamedRec("c1", "by the model again")
		auto.AutoTitle = true
		before := len(allEvents(t, s))
		if err := s.Append(t.Context(), auto); !errors.Is(err, agent.ErrUserTitled) {
			t.Fatalf("auto title after a user's: %v, want ErrUserTitled", err)
		}
		if got, _ := s.Conversation(t.Context(), "c1"); got.Title != "mine" || !got.UserTitled {
			t.Fatalf("after the refused auto title: %+v", got)
		}
		if n := len(allEvents(t, s)); n != before {
			t.Fatalf("the refused title wrote %d events", n-before)
		}

		// A conversation created with a user's title.
		rec := createdRec("c2", "given")
		rec.Conversation.UserTitled = true
		mustAppend(t, s, rec)
		auto = renamedRec("c2", "x")
		auto.AutoTitle = true
		if err := s.Append(t.Context(), auto); !errors.Is(err, agent.ErrUserTitled) {
			t.Fatalf("auto title of a titled conversation: %v", err)
		}
	})
}
