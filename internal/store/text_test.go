package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestBadTextIsRefusedAlike: NUL bytes and invalid UTF-8 in ids, titles,
// client ids and cursors are bad_request (writes) or not_found (reads) on
// both databases, never an internal error.
func TestBadTextIsRefusedAlike(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		mustAppend(t, s, createdRec("c", "ok"))
		code := func(err error) string {
			var e *agent.Error
			if errors.As(err, &e) {
				return e.Code
			}
			return "internal: " + err.Error()
		}
		for _, bad := range []string{"a\x00b", "a\xffb"} {
			writes := map[string]*agent.Record{
				"conversation id": createdRec(bad, "t"),
				"title":           createdRec("c-"+newID(), bad),
				"rename":          renamedRec("c", bad),
				"client_id":       userRec("c", "hi", bad),
				"event id":        func() *agent.Record { r := textRec("c", "x"); r.Event.ID = bad; return r }(),
			}
			for what, rec := range writes {
				if err := s.Append(ctx, rec); err == nil || code(err) != agent.CodeBadRequest {
					t.Errorf("%q in %s: %v, want bad_request", bad, what, err)
				}
			}
			if _, err := s.Conversation(ctx, bad); err == nil || code(err) != agent.CodeNotFound {
				t.Errorf("Conversation(%q): %v, want not_found", bad, err)
			}
			if _, err := s.EventSeq(ctx, bad); err == nil || code(err) != agent.CodeNotFound {
				t.Errorf("EventSeq(%q): %v, want not_found", bad, err)
			}
			if _, err := s.MessageByClientID(ctx, "c", bad); err == nil || code(err) != agent.CodeNotFound {
				t.Errorf("MessageByClientID(%q): %v, want not_found", bad, err)
			}
			if _, err := s.Messages(ctx, agent.MessageQuery{ConversationID: bad}); err == nil || code(err) != agent.CodeNotFound {
				t.Errorf("Messages(%q): %v, want not_found", bad, err)
			}
			if evs, err := s.Events(ctx, agent.EventQuery{ConversationID: bad}); err != nil || len(evs) != 0 {
				t.Errorf("Events(%q): %d, %v; want none", bad, len(evs), err)
			}
		}
	})
}

// An unknown id is named cut short: a 20 KB id from a request is not
// echoed whole.
func TestNotFoundCutsTheID(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		id := strings.Repeat("é", 10000)
		_, err := s.Conversation(t.Context(), id)
		if agent.ErrorCode(err) != agent.CodeNotFound || len(err.Error()) > 200 {
			t.Fatalf("%d-byte error: %.100v", len(err.Error()), err)
		}
	})
}
