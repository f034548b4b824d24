package agent

import (
	"context"
	"errors"
	"regexp"
)

// externalID is what a conversation id chosen by a client may look like:
// the ids the AI SDK's useChat and AG-UI's clients make (nanoid, UUID), and
// agentik's own.
var externalID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// CheckExternalID says what is wrong with a conversation id a client chose,
// or nil.
func CheckExternalID(field, id string) error {
	if !externalID.MatchString(id) {
		return Errorf(CodeBadRequest, "%s must be 1–128 letters, digits, '-' or '_' (a conversation id), got %q", field, Shorten(id, 140))
	}
	return nil
}

// OpenConversation returns the stored conversation with the id a client
// chose (the AI SDK's chat id, AG-UI's threadId), creating it when it does
// not exist yet; created says it was made now. The id names the
// conversation itself, so the same id reaches it from every protocol and
// from agentik's own UI. An id that belongs to a conversation the caller
// may not see answers not_found, like any other unknown id.
func (r *Runner) OpenConversation(ctx context.Context, id string) (c Conversation, created bool, err error) {
	if err := CheckExternalID("id", id); err != nil {
		return Conversation{}, false, err
	}
	if r.IsTemp(id) {
		return Conversation{}, false, Errorf(CodeNotFound, "conversation %s not found", id)
	}
	// The permission check comes before any write: an id that is stored
	// and not the caller's answers not_found here, and nothing is created,
	// appended or cached for it (a create of someone else's id must not
	// even be attempted).
	c, err = r.cfg.Store.Conversation(ctx, id)
	switch {
	case err == nil && Scope(ctx) != "" && r.allowed(Scope(ctx), c, levelRead) != nil:
		return Conversation{}, false, r.allowed(Scope(ctx), c, levelRead)
	case err == nil:
		return c, false, nil
	case !errors.Is(err, ErrNotFound):
		return Conversation{}, false, err
	}
	c, err = r.createConversation(ctx, id, "", false, Settings{})
	if err == nil {
		return c, true, nil
	}
	if errors.Is(err, ErrBadRequest) {
		// It exists after all: made by a concurrent request, or someone
		// else's.
		c, err = r.conversation(ctx, id)
		return c, false, err
	}
	return Conversation{}, false, err
}
