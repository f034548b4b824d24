package agent

import (
	"cmp"
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Feedback (DESIGN.md §12.5a): a person's 👍 or 👎 on an answer, with an
// optional comment; one per person and answer, changed by rating again
// and removed by rating "". A person rates only the answers of the
// conversations they may read (access.go); their ratings are theirs: a
// member reads their own, an admin everyone's, counted per model and
// agent.

// Ratings.
const (
	RatingUp   = "up"
	RatingDown = "down"
)

// MaxFeedbackComment is the longest comment, in characters.
const MaxFeedbackComment = 2000

// DefaultFeedbackList and MaxFeedbackList bound a list of ratings.
const (
	DefaultFeedbackList = 100
	MaxFeedbackList     = 1000
)

// Feedback is one person's rating of one answer.
type Feedback struct {
	ConversationID string    `json:"conversation_id"`
	MessageID      string    `json:"message_id"`
	UserID         string    `json:"user_id"`
	Rating         string    `json:"rating"` // RatingUp or RatingDown
	Comment        string    `json:"comment,omitempty"`
	Model          string    `json:"model,omitempty"` // the answer's model
	Agent          string    `json:"agent,omitempty"` // the answer's agent
	UpdatedAt      time.Time `json:"updated_at"`
}

// FeedbackCount is the ratings of the answers of one model and agent.
type FeedbackCount struct {
	Model string `json:"model"`
	Agent string `json:"agent"`
	Up    int    `json:"up"`
	Down  int    `json:"down"`
}

// FeedbackQuery selects ratings: of a conversation and a user when set
// (each "" for all), the latest first, at most Limit.
type FeedbackQuery struct {
	ConversationID string
	UserID         string
	Limit          int
}

// FeedbackStore keeps ratings.
type FeedbackStore interface {
	// Answer is assistant message id of conversation conversationID;
	// not_found when there is none.
	Answer(ctx context.Context, conversationID, id string) (Message, error)
	// PutFeedback stores f, replacing the user's rating of that message.
	PutFeedback(ctx context.Context, f Feedback) error
	// DeleteFeedback removes userID's rating of message id (none: nil).
	DeleteFeedback(ctx context.Context, messageID, userID string) error
	// Feedback lists ratings, the latest first.
	Feedback(ctx context.Context, q FeedbackQuery) ([]Feedback, error)
	// FeedbackCounts counts every rating per model and agent.
	FeedbackCounts(ctx context.Context) ([]FeedbackCount, error)
}

// FeedbackInput is what rating an answer takes.
type FeedbackInput struct {
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id"`
	Rating         string `json:"rating"` // "up", "down", or "" to remove
	Comment        string `json:"comment"`
}

// Feedbacks is the feedback service.
type Feedbacks struct {
	runner *Runner
	store  FeedbackStore
	now    Clock
}

// NewFeedbacks makes the feedback service; now is time.Now when nil.
func NewFeedbacks(r *Runner, st FeedbackStore, now Clock) *Feedbacks {
	if now == nil {
		now = time.Now
	}
	return &Feedbacks{runner: r, store: st, now: now}
}

// Rate stores (or, with rating "", removes) the caller's rating of an
// answer of a conversation they may read. The result is the rating
// stored (with rating "" after a removal).
func (f *Feedbacks) Rate(ctx context.Context, in FeedbackInput) (Feedback, error) {
	switch {
	case in.ConversationID == "":
		return Feedback{}, Errorf(CodeBadRequest, "conversation_id is required")
	case in.MessageID == "":
		return Feedback{}, Errorf(CodeBadRequest, "message_id is required")
	case in.Rating != RatingUp && in.Rating != RatingDown && in.Rating != "":
		return Feedback{}, Errorf(CodeBadRequest, "rating must be %q, %q or \"\" (to remove it), got %q", RatingUp, RatingDown, Shorten(in.Rating, 40))
	case utf8.RuneCountInString(in.Comment) > MaxFeedbackComment || !utf8.ValidString(in.Comment) || strings.ContainsRune(in.Comment, 0):
		return Feedback{}, Errorf(CodeBadRequest, "comment must be text of at most %d characters", MaxFeedbackComment)
	case in.Rating == "" && in.Comment != "":
		return Feedback{}, Errorf(CodeBadRequest, "a comment needs a rating (%q or %q)", RatingUp, RatingDown)
	}
	if err := f.runner.readAccess(ctx, in.ConversationID); err != nil {
		return Feedback{}, err
	}
	if f.runner.IsTemp(in.ConversationID) {
		return Feedback{}, Errorf(CodeBadRequest, "a temporary chat keeps no feedback")
	}
	m, err := f.store.Answer(ctx, in.ConversationID, in.MessageID)
	if err != nil {
		return Feedback{}, err
	}
	user := PrincipalFrom(ctx).UserID
	if in.Rating == "" {
		gone := Feedback{ConversationID: in.ConversationID, MessageID: m.ID, UserID: user, UpdatedAt: f.now().UTC()}
		return gone, f.store.DeleteFeedback(ctx, m.ID, user)
	}
	fb := Feedback{ConversationID: in.ConversationID, MessageID: m.ID, UserID: user, Rating: in.Rating,
		Comment: strings.TrimSpace(in.Comment), Model: m.Model, Agent: cmp.Or(m.Agent, DefaultAgent), UpdatedAt: f.now().UTC()}
	if err := f.store.PutFeedback(ctx, fb); err != nil {
		return Feedback{}, err
	}
	return fb, nil
}

// Of lists the ratings of a conversation the caller may read: a member's
// own, an admin's everyone's.
func (f *Feedbacks) Of(ctx context.Context, conversationID string) ([]Feedback, error) {
	if err := f.runner.readAccess(ctx, conversationID); err != nil {
		return nil, err
	}
	return f.store.Feedback(ctx, FeedbackQuery{ConversationID: conversationID, UserID: Scope(ctx), Limit: MaxFeedbackList})
}

// FeedbackReport is what an admin reads: the counts per model and agent
// and the latest ratings.
type FeedbackReport struct {
	Counts   []FeedbackCount `json:"counts"`
	Feedback []Feedback      `json:"feedback"`
}

// Report is every rating, for an admin: forbidden for a member.
func (f *Feedbacks) Report(ctx context.Context, limit int) (FeedbackReport, error) {
	if !PrincipalFrom(ctx).Admin() {
		return FeedbackReport{}, errAdminOnly()
	}
	if limit < 0 || limit > MaxFeedbackList {
		return FeedbackReport{}, Errorf(CodeBadRequest, "limit must be between 1 and %d", MaxFeedbackList)
	}
	counts, err := f.store.FeedbackCounts(ctx)
	if err != nil {
		return FeedbackReport{}, err
	}
	list, err := f.store.Feedback(ctx, FeedbackQuery{Limit: cmp.Or(limit, DefaultFeedbackList)})
	if err != nil {
		return FeedbackReport{}, err
	}
	if counts == nil {
		counts = []FeedbackCount{}
	}
	if list == nil {
		list = []Feedback{}
	}
	return FeedbackReport{Counts: counts, Feedback: list}, nil
}
