package agui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// runInput is AG-UI's RunAgentInput as far as agentik reads it. tools,
// context, state and forwardedProps are accepted and ignored: agentik's
// own tools run on the server.
type runInput struct {
	ThreadID *string       `json:"threadId"`
	RunID    *string       `json:"runId"`
	Messages *[]inMessage  `json:"messages"`
	Resume   []resumeEntry `json:"resume"`
}

type inMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved or cancelled
	Payload     json.RawMessage `json:"payload"`
}

// run is a checked request.
type run struct {
	threadID, runID string
	// userID and content: the last message when it is the user's.
	userID  string
	content []agent.Content
	resume  []resumeEntry
}

// decode reads and checks RunAgentInput; nothing is stored before it
// succeeds. A partial run (threadID, runID) comes back with an error when
// the body got that far, for the RUN_ERROR.
func decode(r *http.Request) (run, error) {
	var in runInput
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return run{}, agent.Errorf(agent.CodeTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
		case errors.As(err, &te):
			return run{}, agent.Errorf(agent.CodeBadRequest, "%s must be %s, not %s (the body is AG-UI's RunAgentInput)", te.Field, jsonType(te.Type.String()), te.Value)
		case errors.Is(err, io.EOF):
			return run{}, agent.Errorf(agent.CodeBadRequest, "the body is empty; send AG-UI's RunAgentInput {threadId, runId, messages}")
		}
		return run{}, agent.Errorf(agent.CodeBadRequest, "the body must be AG-UI's RunAgentInput, a JSON object {threadId, runId, messages}: %v", err)
	}
	var rn run
	if in.ThreadID == nil {
		return rn, agent.Errorf(agent.CodeBadRequest, "threadId is required: it names the conversation")
	}
	if err := agent.CheckExternalID("threadId", *in.ThreadID); err != nil {
		return rn, err
	}
	rn.threadID = *in.ThreadID
	if in.RunID == nil || *in.RunID == "" {
		return rn, agent.Errorf(agent.CodeBadRequest, "runId is required")
	}
	if len(*in.RunID) > 200 {
		return rn, agent.Errorf(agent.CodeBadRequest, "runId is %d bytes long; at most 200 are allowed", len(*in.RunID))
	}
	rn.runID = *in.RunID
	if in.Messages == nil {
		return rn, agent.Errorf(agent.CodeBadRequest, "messages is required (an array; [] for none)")
	}
	for i, e := range in.Resume {
		if e.InterruptID == "" {
			return rn, agent.Errorf(agent.CodeBadRequest, "resume[%d].interruptId is required", i)
		}
		if e.Status != "resolved" && e.Status != "cancelled" {
			return rn, agent.Errorf(agent.CodeBadRequest, "resume[%d].status must be \"resolved\" or \"cancelled\", got %q", i, agent.Shorten(e.Status, 40))
		}
		if _, err := decision(i, e); err != nil {
			return rn, err
		}
	}
	rn.resume = in.Resume
	ms := *in.Messages
	if len(ms) == 0 || len(rn.resume) > 0 || ms[len(ms)-1].Role != "user" {
		return rn, nil
	}
	last := len(ms) - 1
	m := ms[last]
	field := fmt.Sprintf("messages[%d]", last)
	if m.ID == "" {
		return rn, agent.Errorf(agent.CodeBadRequest, "%s.id is required", field)
	}
	content, err := userContent(field+".content", m.Content)
	if err != nil {
		return rn, err
	}
	if err := agent.CheckContent(content); err != nil {
		return rn, err
	}
	rn.userID, rn.content = m.ID, content
	return rn, nil
}

// payload is the answer to an approval interrupt.
type payload struct {
	Approved   *bool           `json:"approved"`
	EditedArgs json.RawMessage `json:"editedArgs"`
	Reason     string          `json:"reason"`
}

// decision is resume entry i as an approval decision.
func decision(i int, e resumeEntry) (agent.ApprovalInput, error) {
	in := agent.ApprovalInput{CallID: e.InterruptID}
	if e.Status == "cancelled" {
		in.Decision, in.Reason = agent.DecisionDeny, "cancelled"
		return in, nil
	}
	var p payload
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.Approved == nil {
		return in, agent.Errorf(agent.CodeBadRequest, "resume[%d].payload must be {\"approved\": true|false, \"editedArgs\"?: {…}, \"reason\"?: \"…\"}", i)
	}
	in.Decision, in.Reason = agent.DecisionDeny, p.Reason
	if *p.Approved {
		in.Decision = agent.DecisionApprove
		if len(p.EditedArgs) > 0 && !bytes.Equal(p.EditedArgs, []byte("null")) {
			var obj map[string]json.RawMessage
			if json.Unmarshal(p.EditedArgs, &obj) != nil || obj == nil {
				return in, agent.Errorf(agent.CodeBadRequest, "resume[%d].payload.editedArgs must be a JSON object (the tool's arguments)", i)
			}
			in.Arguments = p.EditedArgs
		}
	}
	return in, nil
}

// userContent reads a user message's content: a string, or parts (text,
// and images given inline as data).
func userContent(field string, raw json.RawMessage) ([]agent.Content, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []agent.Content{agent.Text(s)}, nil
	}
	var parts []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source *struct {
			Type     string `json:"type"`
			Value    string `json:"value"`
			MimeType string `json:"mimeType"`
		} `json:"source"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "%s must be a string or an array of content parts", field)
	}
	var out []agent.Content
	for j, p := range parts {
		pf := fmt.Sprintf("%s[%d]", field, j)
		switch {
		case p.Type == "text":
			out = append(out, agent.Text(p.Text))
		case p.Type == "image" && p.Source != nil && p.Source.Type == "data":
			if _, err := base64.StdEncoding.DecodeString(p.Source.Value); err != nil {
				return nil, agent.Errorf(agent.CodeBadRequest, "%s.source.value holds invalid base64", pf)
			}
			out = append(out, agent.Content{Type: agent.ContentImage, Mime: p.Source.MimeType, Data: p.Source.Value})
		default:
			return nil, agent.Errorf(agent.CodeBadRequest, "%s is not supported: send text parts, and image parts whose source is {\"type\":\"data\"} (agentik does not fetch URLs)", pf)
		}
	}
	return out, nil
}

// jsonType names a Go type as the JSON type it decodes from.
func jsonType(t string) string {
	switch {
	case strings.Contains(t, "string"):
		return "a string"
	case strings.Contains(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "agui.") || strings.HasPrefix(t, "*agui."):
		return "an object"
	}
	return t
}
