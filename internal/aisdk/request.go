package aisdk

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// Triggers of the AI SDK's chat requests.
const (
	triggerSubmit     = "submit-message"
	triggerRegenerate = "regenerate-message"
)

// chatBody is the body DefaultChatTransport posts: the chat's id, its
// messages, and why it sends them. Fields an app adds through the
// transport's body option are ignored.
type chatBody struct {
	ID        *string     `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
}

// uiMessage is a UIMessage as far as agentik reads it.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart is one part of a UIMessage: text and files of a user message,
// and the tool parts of an assistant message that carry approval answers.
type uiPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	MediaType  string      `json:"mediaType"`
	Filename   string      `json:"filename"`
	URL        string      `json:"url"`
	ToolCallID string      `json:"toolCallId"`
	State      string      `json:"state"`
	Approval   *uiApproval `json:"approval"`
}

type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// chatRequest is a checked chat request: what to do, and with what.
type chatRequest struct {
	id      string
	trigger string
	// user is the last message when it is the user's: its id (the send's
	// client_id) and content.
	userID  string
	content []agent.Content
	// approvals answer the tool calls waiting in the last (assistant)
	// message; messageID is that message's id.
	approvals []agent.ApprovalInput
	messageID string
}

// decode reads and checks a chat request; nothing is stored before it
// succeeds.
func decode(r *http.Request) (chatRequest, error) {
	var b chatBody
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&b); err != nil {
		var te *json.UnmarshalTypeError
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return chatRequest{}, agent.Errorf(agent.CodeTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
		case errors.As(err, &te):
			return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "%s must be %s, not %s (the body of the AI SDK's DefaultChatTransport: {id, messages, trigger})", te.Field, jsonType(te.Type.String()), te.Value)
		case errors.Is(err, io.EOF):
			return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "the body is empty; send the AI SDK's chat request {id, messages, trigger}")
		}
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "the body must be a JSON object {id, messages, trigger}: %v", err)
	}
	if b.ID == nil {
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "id is required: the chat's id, which names its conversation")
	}
	if err := agent.CheckExternalID("id", *b.ID); err != nil {
		return chatRequest{}, err
	}
	req := chatRequest{id: *b.ID, trigger: b.Trigger}
	switch b.Trigger {
	case triggerSubmit, triggerRegenerate:
	case "":
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "trigger is required: %q or %q", triggerSubmit, triggerRegenerate)
	default:
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "trigger must be %q or %q, got %q", triggerSubmit, triggerRegenerate, agent.Shorten(b.Trigger, 40))
	}
	if len(b.Messages) == 0 {
		if b.Trigger == triggerRegenerate {
			return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "a regenerate needs messages, the last one the user message to answer again")
		}
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "messages must hold at least one message, the last one the user's new message")
	}
	for i, m := range b.Messages {
		switch m.Role {
		case "user", "assistant", "system":
		default:
			return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "messages[%d].role must be user, assistant or system, got %q", i, agent.Shorten(m.Role, 40))
		}
	}
	last := len(b.Messages) - 1
	m := b.Messages[last]
	field := fmt.Sprintf("messages[%d]", last)
	switch {
	case m.Role == "user":
		if m.ID == "" {
			return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "%s.id is required", field)
		}
		content, err := userContent(field, m.Parts)
		if err != nil {
			return chatRequest{}, err
		}
		if err := agent.CheckContent(content); err != nil {
			return chatRequest{}, err
		}
		req.userID, req.content = m.ID, content
	case m.Role == "assistant" && b.Trigger == triggerSubmit:
		for j, p := range m.Parts {
			if p.State != "approval-responded" {
				continue
			}
			pf := fmt.Sprintf("%s.parts[%d].approval", field, j)
			if p.Approval == nil || p.Approval.ID == "" || p.Approval.Approved == nil {
				return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "%s needs id and approved (addToolApprovalResponse's answer)", pf)
			}
			d := agent.DecisionDeny
			if *p.Approval.Approved {
				d = agent.DecisionApprove
			}
			req.approvals = append(req.approvals, agent.ApprovalInput{CallID: p.Approval.ID, Decision: d, Reason: p.Approval.Reason})
		}
		if len(req.approvals) == 0 {
			return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "the last message is the assistant's but answers no tool approval; send a user message, or answer an approval with addToolApprovalResponse")
		}
		req.messageID = m.ID
	case b.Trigger == triggerRegenerate:
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "a regenerate's last message must be the user message to answer again, got role %q", m.Role)
	default:
		return chatRequest{}, agent.Errorf(agent.CodeBadRequest, "%s.role must be user (the new message), got %q", field, m.Role)
	}
	return req, nil
}

// jsonType names a Go type as the JSON type it decodes from.
func jsonType(t string) string {
	switch {
	case t == "string" || strings.HasPrefix(t, "*string"):
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "aisdk.") || strings.HasPrefix(t, "*aisdk."):
		return "an object"
	case t == "bool" || t == "*bool":
		return "a boolean"
	}
	return t
}

// userContent is a user message's parts as agentik content: text parts,
// and files as data: URLs (images as images, other documents as file
// parts).
func userContent(field string, parts []uiPart) ([]agent.Content, error) {
	var out []agent.Content
	for j, p := range parts {
		pf := fmt.Sprintf("%s.parts[%d]", field, j)
		switch p.Type {
		case "text":
			out = append(out, agent.Text(p.Text))
		case "file":
			rest, ok := strings.CutPrefix(p.URL, "data:")
			mime, data, ok2 := strings.Cut(rest, ";base64,")
			if !ok || !ok2 {
				return nil, agent.Errorf(agent.CodeBadRequest, "%s.url must be a data: URL (data:application/pdf;base64,…); agentik does not fetch remote files", pf)
			}
			if _, err := base64.StdEncoding.DecodeString(data); err != nil {
				return nil, agent.Errorf(agent.CodeBadRequest, "%s.url holds invalid base64", pf)
			}
			if strings.HasPrefix(p.MediaType, "image/") {
				out = append(out, agent.Content{Type: agent.ContentImage, Mime: mime, Data: data})
				break
			}
			// A document: the centre stores it as a file of the sender's
			// and gives the model its text (agent filepart.go).
			name := p.Filename
			if name == "" {
				name = "attachment"
			}
			out = append(out, agent.Content{Type: agent.ContentFile, Name: name, Mime: cmp.Or(p.MediaType, mime), Data: data})
		case "step-start", "source-url", "source-document":
		default:
			if !strings.HasPrefix(p.Type, "data-") {
				return nil, agent.Errorf(agent.CodeBadRequest, "%s.type %q is not supported in a user message; send text and file parts", pf, agent.Shorten(p.Type, 40))
			}
		}
	}
	if len(out) == 0 {
		return nil, agent.Errorf(agent.CodeBadRequest, "%s has no text or file part to send", field)
	}
	return out, nil
}
