package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/relay"
)

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Error("health_db_failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "database": "ok", "model": s.modelName, "model_configured": s.runner.ModelConfigured()})
}

func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, agent.Errorf(agent.CodeNotFound, "no route %s %s; see docs/PROTOCOL.md", r.Method, r.URL.Path))
}

// The conversation ops (docs/PROTOCOL.md), each the REST route under
// /agentik/conversations and the WebSocket op of its name (op.go); the
// runner checks the principal (agent/access.go).

// pageQuery is a page of a list: offset and limit.
type pageQuery struct {
	Offset integer `json:"offset"`
	Limit  integer `json:"limit"`
}

// listQuery is list_conversations' fields: a page, and mine (true or
// "true") for the caller's own conversations only, which an admin's
// sidebar asks for (everyone's are in the admin panel's user view).
type listQuery struct {
	pageQuery
	Mine any `json:"mine"`
}

func (q *pageQuery) check() error {
	if o := q.Offset.N; o < 0 || o > 1<<31 {
		return agent.Errorf(agent.CodeBadRequest, "offset must be 0 or more, got %d", o)
	}
	if l := q.Limit.or(agent.DefaultPageSize); l < 1 || l > agent.MaxPageSize {
		return agent.Errorf(agent.CodeBadRequest, "limit must be between 1 and %d, got %d", agent.MaxPageSize, l)
	}
	return nil
}

func (q pageQuery) page() (offset, limit int) {
	return int(q.Offset.N), int(q.Limit.or(agent.DefaultPageSize))
}

// cursor is a history read's after: a seq, or an instant (RFC 3339) that
// stands for the last message before it.
type cursor struct {
	integer
	At time.Time
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *cursor) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if t, ok := instant(s); ok {
			c.At = t
			return nil
		}
	}
	if err := c.integer.UnmarshalJSON(b); err != nil {
		return &json.UnmarshalTypeError{Value: agent.Shorten(string(b), 40) + " (neither a seq nor an RFC 3339 time)", Type: reflect.TypeFor[int64]()}
	}
	return nil
}

// messagesQuery is a get_messages.
type messagesQuery struct {
	conversationRef
	pageQuery
	After  cursor `json:"after"`
	Branch string `json:"branch"` // "all" for every branch
	// End, in place of offset: the latest messages before this position
	// (see agent.MessageQuery.End).
	End integer `json:"end"`
}

func (q *messagesQuery) check() error {
	if err := q.conversationRef.check(); err != nil {
		return err
	}
	if q.After.N < 0 {
		return agent.Errorf(agent.CodeBadRequest, "after must be 0 or more, got %d", q.After.N)
	}
	if q.End.Set && (q.End.N < 1 || q.End.N > 1<<31) {
		return agent.Errorf(agent.CodeBadRequest, "end must be a position of 1 or more, got %d", q.End.N)
	}
	return q.pageQuery.check()
}

// renameInput is a rename.
type renameInput struct {
	conversationRef
	protocol.RenameRequest
}

func (in *renameInput) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	if in.Title == nil {
		return agent.Errorf(agent.CodeBadRequest, "title is required, e.g. {\"title\":\"Trip plans\"}")
	}
	return nil
}

// updateInput is an update_conversation.
type updateInput struct {
	conversationRef
	protocol.UpdateRequest
}

// sendInput is a send.
type sendInput struct {
	conversationRef
	protocol.SendRequest
}

func (in *sendInput) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	return needContent("send", in.Content)
}

// needContent is the bad_request of a send or edit without content.
func needContent(op string, c []agent.Content) error {
	if len(c) == 0 {
		return agent.Errorf(agent.CodeBadRequest, "%s needs content, e.g. [{\"type\":\"text\",\"body\":\"hello\"}]", op)
	}
	return nil
}

// messageRef names one message of a conversation: cancel_queued's
// {message_id}, switch_branch's message_id.
type messageRef struct {
	conversationRef
	MessageID string `json:"message_id"`
}

func (in *messageRef) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	return need("message_id", in.MessageID)
}

var (
	opCreateConversation = declare(protocol.OpCreateConversation, http.StatusCreated, func(ctx context.Context, s *Server, in protocol.CreateRequest) (any, error) {
		if in.Knowledge != nil { // checked before anything is written
			if err := s.convs.CheckKnowledge(ctx, *in.Knowledge); err != nil {
				return nil, err
			}
		}
		if len(in.Content) > 0 {
			return s.createWithMessage(ctx, in)
		}
		if in.ClientID != "" {
			return nil, agent.Errorf(agent.CodeBadRequest, "client_id names a first message: send content with it, or leave it out")
		}
		c, err := s.runner.Create(ctx, agent.NewConversation{Title: in.Title, Temp: in.Temp, Settings: in.Settings()})
		if err != nil || in.Knowledge == nil {
			return c, err
		}
		return s.withKnowledge(ctx, c, *in.Knowledge)
	})
	opListConversations = declare(protocol.OpListConversations, 0, func(ctx context.Context, s *Server, in listQuery) (any, error) {
		offset, limit := in.page()
		if in.Mine == true || in.Mine == "true" { // an admin's own sidebar: her conversations only
			ctx = agent.OwnedBy(ctx, agent.PrincipalFrom(ctx).UserID)
		}
		b, err := s.listPage(ctx, offset, limit) // a protocol.ListResult
		if err != nil {
			return nil, err
		}
		return json.RawMessage(b), nil
	})
	opGetConversation = declare(protocol.OpGetConversation, 0, func(ctx context.Context, s *Server, in conversationRef) (any, error) {
		c, err := s.convs.Get(ctx, in.ConversationID)
		if err != nil {
			return nil, err
		}
		c.Knowledge, err = s.convs.Knowledge(ctx, c.ID)
		return c, err
	})
	opGetMessages = declare(protocol.OpGetMessages, 0, func(ctx context.Context, s *Server, in messagesQuery) (any, error) {
		offset, limit := in.page()
		q := agent.MessageQuery{ConversationID: in.ConversationID, After: in.After.N, Offset: offset, Limit: limit, End: int(in.End.N), Bytes: s.cfg.HistoryBytes}
		if !in.After.At.IsZero() {
			after, err := s.cursorAt(ctx, in.After.At, in.ConversationID)
			if err != nil {
				return nil, err
			}
			q.After = after
		}
		var err error
		if q.All, err = allBranches(in.Branch); err != nil {
			return nil, err
		}
		p, err := s.convs.History(ctx, q)
		if err != nil {
			return nil, err
		}
		return protocol.NewMessagesResult(p), nil
	})
	opRename = declare(protocol.OpRename, 0, func(ctx context.Context, s *Server, in renameInput) (any, error) {
		return s.convs.Rename(ctx, in.ConversationID, *in.Title)
	})
	opUpdateConversation = declare(protocol.OpUpdateConversation, 0, func(ctx context.Context, s *Server, in updateInput) (any, error) {
		st := in.Settings()
		st.Title = in.Title
		if in.Knowledge != nil {
			if err := s.convs.CheckKnowledge(ctx, *in.Knowledge); err != nil {
				return nil, err
			}
			if st == (agent.Settings{}) { // knowledge alone
				c, err := s.convs.Get(ctx, in.ConversationID)
				if err != nil {
					return nil, err
				}
				return s.withKnowledge(ctx, c, *in.Knowledge)
			}
		}
		c, err := s.convs.Update(ctx, in.ConversationID, st)
		if err != nil || in.Knowledge == nil {
			return c, err
		}
		return s.withKnowledge(ctx, c, *in.Knowledge)
	})
	opDelete = declare(protocol.OpDelete, http.StatusNoContent, func(ctx context.Context, s *Server, in conversationRef) (any, error) {
		return protocol.Empty{}, s.runner.Delete(ctx, in.ConversationID)
	})
	opInterrupt = declare(protocol.OpInterrupt, 0, func(ctx context.Context, s *Server, in conversationRef) (any, error) {
		ok, err := s.runner.Interrupt(ctx, in.ConversationID)
		return protocol.InterruptResult{Interrupted: ok}, err
	})
	// opSend starts a turn (or queues it); over REST it answers with the
	// turn's SSE stream (streamTurn).
	opSend = streamed(declare(protocol.OpSend, 0, func(ctx context.Context, s *Server, in sendInput) (any, error) {
		if err := s.checkActAs(ctx, in.ConversationID, in.ActAsAdmin); err != nil {
			return nil, err
		}
		res, err := s.runner.Start(ctx, agent.StartInput{ConversationID: in.ConversationID, Content: in.Content, ClientID: in.ClientID, OnBusy: in.OnBusy})
		return sendResult(res), err
	}), streamTurn)
)

// createWithMessage is create_conversation with its first message: one
// Start makes the conversation and starts the turn in the same append, so
// a refused message (no model, budget, bad content) leaves nothing. The
// knowledge bases, checked first, are the first turn's and then attached.
func (s *Server) createWithMessage(ctx context.Context, in protocol.CreateRequest) (any, error) {
	if in.Temp {
		return nil, agent.Errorf(agent.CodeBadRequest, "a temp conversation is created without content: its events are not replayed, so subscribe to it first, then send")
	}
	var kb []string
	if in.Knowledge != nil {
		kb = *in.Knowledge
	}
	res, err := s.runner.Start(ctx, agent.StartInput{
		New:     &agent.NewConversation{Title: in.Title, Settings: in.Settings()},
		Content: in.Content, ClientID: in.ClientID, Knowledge: kb,
	})
	if err != nil {
		return nil, err
	}
	var c agent.Conversation
	if len(kb) > 0 {
		if err := s.convs.SetKnowledge(ctx, res.ConversationID, kb); err != nil {
			return nil, err
		}
	}
	if c, err = s.convs.Get(ctx, res.ConversationID); err != nil {
		return nil, err
	}
	return createdSent{conv: c, send: sendResult(res)}, nil
}

// createdSent is create_conversation's answer when it sent the first
// message: the Conversation with "send", the send's result.
type createdSent struct {
	conv agent.Conversation
	send protocol.SendResult
}

func (r createdSent) MarshalJSON() ([]byte, error) {
	c, err := json.Marshal(r.conv)
	if err != nil {
		return nil, err
	}
	sr, err := json.Marshal(r.send)
	if err != nil {
		return nil, err
	}
	out := append(c[:len(c)-1:len(c)-1], `,"send":`...)
	return append(append(out, sr...), '}'), nil
}

// withKnowledge attaches ids to c and answers it with them.
func (s *Server) withKnowledge(ctx context.Context, c agent.Conversation, ids []string) (agent.Conversation, error) {
	if err := s.convs.SetKnowledge(ctx, c.ID, ids); err != nil {
		return agent.Conversation{}, err
	}
	var err error
	c.Knowledge, err = s.convs.Knowledge(ctx, c.ID)
	return c, err
}

// streamTurn answers a REST send, regenerate or edit: the turn's SSE
// stream from its first event; a queued send 202 with its result, a
// duplicate 200 {message_id, duplicate}.
func streamTurn(s *Server, w http.ResponseWriter, r *http.Request, run func() (any, error)) {
	id := r.PathValue("conversation_id")
	var sub *relay.Sub
	var err error
	if s.runner.IsTemp(id) { // never stored: listen before the turn starts
		if sub, err = relay.Conversation(r.Context(), s.broker, id, -1); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	v, err := run()
	res, _ := v.(protocol.SendResult)
	if err != nil || res.Queued || res.Duplicate {
		if sub != nil {
			sub.Close()
		}
		switch {
		case err != nil:
			s.writeError(w, r, err)
		case res.Queued:
			writeQueued(w, res)
		default:
			writeJSON(w, http.StatusOK, map[string]any{"message_id": res.MessageID, "duplicate": true})
		}
		return
	}
	if sub == nil {
		// Replay from the user's message: nothing of the turn is missed.
		if sub, err = relay.Conversation(r.Context(), s.broker, id, res.Seq-1); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.serveSSE(w, r, sub, conversationFrame, true)
}
