package protocol

import (
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// ElicitRequest is the body of POST …/elicit (the WS op's fields): the
// answer to a tool's request for input (DESIGN.md §11.6).
type ElicitRequest struct {
	RequestID string          `json:"request_id"`
	Action    string          `json:"action"` // accept, decline or cancel
	Content   json.RawMessage `json:"content,omitempty"`
}

// ElicitFields are the elicit op's fields of a Command. Its content is the
// form's object, not a send's parts, so MarshalJSON writes it apart.
type ElicitFields struct {
	RequestID     string          `json:"request_id,omitempty"`
	Action        string          `json:"action,omitempty"`
	ElicitContent json.RawMessage `json:"-"`
}

// Input is the answer an elicit command or body gives.
func (e ElicitRequest) Input() agent.ElicitInput {
	return agent.ElicitInput{RequestID: e.RequestID, Action: e.Action, Content: e.Content}
}

// MarshalJSON implements json.Marshaler: an elicit command carries its
// ElicitContent as content (what Decode reads back).
func (c Command) MarshalJSON() ([]byte, error) {
	type plain Command
	b, err := json.Marshal(plain(c))
	if err != nil || c.Op != OpElicit || len(c.ElicitContent) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	all["content"] = c.ElicitContent
	return json.Marshal(all)
}
