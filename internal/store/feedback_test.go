package store

import (
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Feedback on both databases and in both modes: one rating per user and
// answer, changed in place; only an assistant message of that
// conversation takes one; the counts per model and agent; a user's and a
// conversation's lists; a removal; and the ratings go with their
// conversation.
func TestFeedback(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeFast, ModePlain} {
		t.Run(string(mode), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, dsn string) {
				s := open(t, dsn, Options{Mode: mode})
				ctx := t.Context()
				answer := assistantRec("c1", "the answer")
				answer.Event.Event.Message.Model = "openai/gpt"
				answer.Event.Event.Message.Agent = "helper"
				question := userRec("c1", "the question", "")
				mustAppend(t, s, ownedRec("c1", "t", "ann"), question, answer)
				aid := answer.Event.Event.Message.ID
				qid := question.Event.Event.Message.ID

				if _, err := s.Answer(ctx, "c1", qid); agent.ErrorCode(err) != agent.CodeNotFound {
					t.Fatalf("a user message as an answer: %v", err)
				}
				if _, err := s.Answer(ctx, "c2", aid); agent.ErrorCode(err) != agent.CodeNotFound {
					t.Fatalf("an answer of another conversation: %v", err)
				}
				m, err := s.Answer(ctx, "c1", aid)
				if err != nil || m.Model != "openai/gpt" || m.Agent != "helper" {
					t.Fatalf("answer %+v, %v", m, err)
				}
				at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
				put := func(user, rating, comment string, at time.Time) {
					t.Helper()
					if err := s.PutFeedback(ctx, agent.Feedback{ConversationID: "c1", MessageID: aid, UserID: user, Rating: rating, Comment: comment, Model: m.Model, Agent: m.Agent, UpdatedAt: at}); err != nil {
						t.Fatal(err)
					}
				}
				put("ann", agent.RatingUp, "", at)
				put("bob", agent.RatingUp, "", at.Add(time.Second))
				put("ann", agent.RatingDown, "too long", at.Add(2*time.Second)) // changes ann's

				all, err := s.Feedback(ctx, agent.FeedbackQuery{Limit: 10})
				if err != nil || len(all) != 2 || all[0].UserID != "ann" || all[0].Rating != agent.RatingDown || all[0].Comment != "too long" || !all[0].UpdatedAt.Equal(at.Add(2*time.Second)) {
					t.Fatalf("all feedback %+v, %v", all, err)
				}
				mine, err := s.Feedback(ctx, agent.FeedbackQuery{ConversationID: "c1", UserID: "bob", Limit: 10})
				if err != nil || len(mine) != 1 || mine[0].Rating != agent.RatingUp {
					t.Fatalf("bob's feedback %+v, %v", mine, err)
				}
				counts, err := s.FeedbackCounts(ctx)
				if err != nil || len(counts) != 1 || counts[0] != (agent.FeedbackCount{Model: "openai/gpt", Agent: "helper", Up: 1, Down: 1}) {
					t.Fatalf("counts %+v, %v", counts, err)
				}
				if err := s.DeleteFeedback(ctx, aid, "bob"); err != nil {
					t.Fatal(err)
				}
				if mine, _ := s.Feedback(ctx, agent.FeedbackQuery{UserID: "bob", Limit: 10}); len(mine) != 0 {
					t.Fatalf("bob's feedback after its removal: %+v", mine)
				}
				mustAppend(t, s, deletedRec("c1"))
				if all, err := s.Feedback(ctx, agent.FeedbackQuery{Limit: 10}); err != nil || len(all) != 0 {
					t.Fatalf("feedback of a deleted conversation: %+v, %v", all, err)
				}
			})
		})
	}
}
