package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
)

// The Conversations API (DESIGN §11.4): /v1/conversations are agentik's
// stored conversations under OpenAI's shapes. An item is a message of the
// conversation's active path: a user message, an assistant message (and
// its reasoning, as a reasoning item), a tool call (function_call) and its
// result (function_call_output). Items are added without a turn; a
// response with "conversation" continues it.

// conversationObject is OpenAI's conversation.
type conversationObject struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

func conversationOf(c agent.Conversation) conversationObject {
	return conversationObject{ID: c.ID, Object: "conversation", CreatedAt: c.CreatedAt.Unix(), Metadata: map[string]string{}}
}

// itemsBody is the body of a create or an items add.
type itemsBody struct {
	Items    []json.RawMessage `json:"items"`
	Metadata map[string]string `json:"metadata"`
}

// readItems reads a body's items into the model's messages.
func readItems(r *http.Request, create bool) ([]agent.ModelMessage, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxResponseBody))
	if err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "read body: %v", err)
	}
	var body itemsBody
	if len(b) > 0 {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
			return nil, badParam("", "the body must be a JSON object")
		}
		for k := range raw {
			if k != "items" && (k != "metadata" || !create) {
				return nil, badParam(k, "unsupported parameter %q; agentik reads items%s", k, map[bool]string{true: " and metadata", false: ""}[create])
			}
		}
		if err := json.Unmarshal(b, &body); err != nil {
			return nil, badParam("items", "items must be a list of input items")
		}
	}
	if len(body.Metadata) > 0 {
		return nil, badParam("metadata", "agentik keeps no metadata on conversations; leave metadata out (a response's metadata is kept)")
	}
	if !create && len(body.Items) == 0 {
		return nil, badParam("items", "items is empty; send at least one item")
	}
	var items []inputItem
	for i, raw := range body.Items {
		it, skip, err := parseItem(fmt.Sprintf("items[%d]", i), raw)
		if err != nil {
			return nil, err
		}
		if it.kind == itemMCPApprovalResp {
			return nil, badParam(it.field, "%s: an mcp_approval_response answers a response; send it as a response's input", it.field)
		}
		if !skip {
			items = append(items, it)
		}
	}
	c := responseCall{calls: map[string]bool{}}
	return c.historyOf(items)
}

func (h *Handler) handleCreateConversation(w http.ResponseWriter, r *http.Request) {
	history, err := readItems(r, true)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	c, err := h.runner.Create(r.Context(), agent.NewConversation{History: history})
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(c))
}

// conversation is a stored conversation the caller may see.
func (h *Handler) conversation(r *http.Request) (agent.Conversation, error) {
	c, err := h.runner.Conversation(r.Context(), r.PathValue("id"))
	if err == nil && c.Temp {
		err = agent.Errorf(agent.CodeNotFound, "conversation %q not found", agent.Shorten(c.ID, 80))
	}
	return c, err
}

func (h *Handler) handleGetConversation(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(c))
}

func (h *Handler) handleDeleteConversation(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err == nil {
		err = h.runner.Delete(r.Context(), c.ID)
	}
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": c.ID, "object": "conversation.deleted", "deleted": true})
}

func (h *Handler) handleAddItems(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	history, err := readItems(r, false)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	ms, err := h.runner.AddHistory(r.Context(), c.ID, history)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, itemList(itemsOf(ms)))
}

// handleListItems is GET /v1/conversations/{id}/items: the active path's
// items, newest first unless order=asc, limit (1–100, 20) at a time after
// the item after.
func (h *Handler) handleListItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			h.WriteError(w, r, badParam("limit", "limit must be 1 to 100, got %q", agent.Shorten(v, 20)))
			return
		}
		limit = n
	}
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		h.WriteError(w, r, badParam("order", "order must be asc or desc, got %q", agent.Shorten(order, 20)))
		return
	}
	c, err := h.conversation(r)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	var ms []agent.Message
	for {
		page, err := h.runner.Messages(r.Context(), agent.MessageQuery{ConversationID: c.ID, Offset: len(ms), Limit: 1000})
		if err != nil {
			h.WriteError(w, r, err)
			return
		}
		ms = append(ms, page...)
		if len(page) < 1000 {
			break
		}
	}
	items := itemsOf(ms)
	if order == "desc" {
		slices.Reverse(items)
	}
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(items, func(it *Item) bool { return it.ID == after })
		if i < 0 {
			h.WriteError(w, r, &paramError{param: "after", err: agent.Errorf(agent.CodeNotFound, "item %q is not in conversation %s", agent.Shorten(after, 80), c.ID)})
			return
		}
		items = items[i+1:]
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	list := itemList(items)
	list["has_more"] = more
	writeJSON(w, http.StatusOK, list)
}

// itemsOf is messages as conversation items.
func itemsOf(ms []agent.Message) []*Item {
	out := []*Item{}
	for _, m := range ms {
		switch m.Type {
		case agent.MessageUser:
			it := &Item{ID: prefixMessage + m.ID, Type: itemMessage, Role: "user", Status: statusCompleted, Content: userParts(m.Content)}
			out = append(out, it)
		case agent.MessageAssistant:
			if m.Reasoning != "" {
				out = append(out, &Item{ID: prefixReasoning + m.ID, Type: itemReasoning, Summary: []Part{{Type: "summary_text", Text: m.Reasoning}}})
			}
			if len(m.Content) == 0 {
				continue
			}
			st := statusCompleted
			if m.Interrupted {
				st = "incomplete"
			}
			it := &Item{ID: prefixMessage + m.ID, Type: itemMessage, Role: "assistant", Status: st, Content: []Part{}}
			for _, c := range m.Content {
				if c.Type == agent.ContentText {
					it.Content = append(it.Content, Part{Type: "output_text", Text: c.Body})
				}
			}
			out = append(out, it)
		case agent.MessageToolCall:
			out = append(out, &Item{ID: prefixFunction + m.ID, Type: itemFunctionCall, CallID: m.CallID, Name: m.Name, Arguments: m.Arguments, Status: statusCompleted})
		case agent.MessageToolResult:
			out = append(out, &Item{ID: prefixFunctionOutput + m.ID, Type: itemFunctionOutput, CallID: m.CallID, Output: ptr(m.Result), Status: statusCompleted})
		}
	}
	return out
}
