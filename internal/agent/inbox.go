package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// The inbox (DESIGN.md §12.4): everything that waits for a person, across
// all of their conversations, whichever protocol or schedule started the
// turn. It keeps nothing of its own: an item is a waiting tool call
// (PendingCall, approval.go) or a tool's request for input (Elicitation,
// elicit.go) as the store holds them, read for one owner; an answer goes
// through Runner.Approve or Runner.Elicit, so the first answer on any
// surface wins and every other is the store's conflict, naming who
// answered and when. Items stay listed (resolved) until their
// conversation's next round of tool calls replaces them.

// Inbox item kinds.
const (
	InboxApproval    = "approval"
	InboxElicitation = "elicitation"
	// InboxCredential is an elicitation of mode ElicitCredential: a
	// per-user tool server waits for the user's own credential. Storing
	// it resolves the item (ResolveCredential); so does an answer.
	InboxCredential = "credential"
)

// ElicitKind is the inbox kind of an elicitation of mode.
func ElicitKind(mode string) string {
	if mode == ElicitCredential {
		return InboxCredential
	}
	return InboxElicitation
}

// Inbox item states.
const (
	InboxPending  = "pending"
	InboxResolved = "resolved"
)

// ByTimeout is who resolved an approval its timeout denied.
const ByTimeout = "timeout"

// InboxItem is one thing that waits (or waited) for a person.
type InboxItem struct {
	ID             string     `json:"id"` // see InboxID
	Kind           string     `json:"kind"`
	ConversationID string     `json:"conversation_id"`
	CallID         string     `json:"call_id"`
	Title          string     `json:"title"`
	CreatedAt      time.Time  `json:"created_at"`
	State          string     `json:"state"`
	ResolvedBy     string     `json:"resolved_by,omitempty"`
	ResolvedAt     *time.Time `json:"resolved_at,omitempty"`
	Detail         InboxInfo  `json:"detail"`
}

// InboxInfo is what an item asks, to answer it in place: the tool call of
// an approval, the request of an elicitation, and how it was answered.
type InboxInfo struct {
	Conversation string          `json:"conversation_title"`
	Name         string          `json:"name,omitempty"`      // approval: the tool
	Arguments    string          `json:"arguments,omitempty"` // approval: its arguments (JSON)
	RequestID    string          `json:"request_id,omitempty"`
	Server       string          `json:"server,omitempty"` // elicitation
	Mode         string          `json:"mode,omitempty"`
	Message      string          `json:"message,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	URL          string          `json:"url,omitempty"`
	Decision     string          `json:"decision,omitempty"` // approval, once decided
	Reason       string          `json:"reason,omitempty"`
	Action       string          `json:"action,omitempty"` // elicitation, once answered
}

// InboxID is the id of the item of kind in conversation convID whose key
// is a call id (approval) or a request id (elicitation). A conversation id
// never holds a '.', so a client can make it from the events that show the
// item: kind.conversation_id.call_id (or .request_id).
func InboxID(kind, convID, key string) string { return kind + "." + convID + "." + key }

// parseInboxID splits an item id; ok is false for one InboxID never makes.
func parseInboxID(id string) (kind, convID, key string, ok bool) {
	kind, rest, _ := strings.Cut(id, ".")
	convID, key, _ = strings.Cut(rest, ".")
	if (kind != InboxApproval && kind != InboxElicitation && kind != InboxCredential) || convID == "" || key == "" {
		return "", "", "", false
	}
	return kind, convID, key, true
}

// InboxStore reads one owner's items: pending ones (pending true), or
// resolved ones still kept. Owner "" is never asked.
type InboxStore interface {
	InboxItems(ctx context.Context, owner string, pending bool) ([]InboxItem, error)
}

// Inbox is the inbox service: a user's items, answered through the
// runner's decision path.
type Inbox struct {
	Runner *Runner
	Store  InboxStore
}

// InboxOwner is whose items ctx's principal's inbox shows (the list and
// the inbox stream): their own conversations', an admin's too. An admin
// may still answer anyone's item by its id, as in the conversation
// (Runner.access), but their inbox is what waits for them.
func InboxOwner(ctx context.Context) string {
	if id := PrincipalFrom(ctx).UserID; id != "" {
		return id
	}
	return "\x00nobody" // no such user: sees nothing
}

// List returns the caller's items in state (InboxPending when ""), oldest
// first.
func (in *Inbox) List(ctx context.Context, state string) ([]InboxItem, error) {
	switch state {
	case "", InboxPending, InboxResolved:
	default:
		return nil, Errorf(CodeBadRequest, "state must be %q or %q, got %q", InboxPending, InboxResolved, Shorten(state, 40))
	}
	return in.Store.InboxItems(ctx, InboxOwner(ctx), state != InboxResolved)
}

// InboxAnswer answers an item: Decision (and Reason, Arguments) for an
// approval, Action (and Content) for an elicitation.
type InboxAnswer struct {
	Decision  string
	Arguments json.RawMessage
	Reason    string
	Action    string
	Content   json.RawMessage
}

// Answer answers item id through the conversation's own decision path
// (Runner.Approve, Runner.Elicit): another user's item, or one no longer
// kept, is not_found; one answered already is conflict naming who and
// when; an answer of the other kind's shape is bad_request.
func (in *Inbox) Answer(ctx context.Context, id string, a InboxAnswer) error {
	kind, convID, key, ok := parseInboxID(id)
	if !ok {
		return Errorf(CodeNotFound, "inbox item %q not found", Shorten(id, 80))
	}
	switch kind {
	case InboxApproval:
		if a.Action != "" || len(a.Content) > 0 {
			return Errorf(CodeBadRequest, "inbox item %s is an approval: answer it with {\"decision\": \"approve\"|\"deny\", \"reason\"?}", Shorten(id, 80))
		}
		return in.Runner.Approve(ctx, convID, ApprovalInput{CallID: key, Decision: a.Decision, Arguments: a.Arguments, Reason: a.Reason})
	default:
		if a.Decision != "" || a.Reason != "" || len(a.Arguments) > 0 {
			return Errorf(CodeBadRequest, "inbox item %s is an elicitation or credential: answer it with {\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\"?}", Shorten(id, 80))
		}
		return in.Runner.Elicit(ctx, convID, ElicitInput{RequestID: key, Action: a.Action, Content: a.Content})
	}
}

// AnsweredBy is the " by who at when" of a conflict's message, for an
// item answered by by at at ("" parts left out).
func AnsweredBy(by string, at time.Time) string {
	s := ""
	if by != "" {
		s = " by " + by
	}
	if !at.IsZero() {
		s += " at " + at.UTC().Format(time.RFC3339)
	}
	return s
}

// ResolveCredential accepts owner's pending credential items of server:
// they stored their credential (or signed in), so the calls that wait go
// on with it. An item answered meanwhile is left as it is.
func (in *Inbox) ResolveCredential(ctx context.Context, owner, server string) error {
	if owner == "" {
		return nil
	}
	ctx = WithPrincipal(ctx, Principal{UserID: owner, Role: RoleMember})
	items, err := in.Store.InboxItems(ctx, owner, true)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Kind != InboxCredential || it.Detail.Server != server {
			continue
		}
		err := in.Runner.Elicit(ctx, it.ConversationID, ElicitInput{RequestID: it.Detail.RequestID, Action: ElicitAccept})
		if err != nil && !errors.Is(err, ErrConflict) && ErrorCode(err) != CodeConflict {
			return err
		}
	}
	return nil
}
