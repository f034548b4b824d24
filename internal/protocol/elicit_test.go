package protocol

import (
	"encoding/json"
	"testing"
)

// TestElicitCommandMarshal: an elicit command carries its content as the
// form's object (not a send's parts), which the server's op table reads.
func TestElicitCommandMarshal(t *testing.T) {
	cmd := Command{Op: OpElicit, ID: "1", ConversationID: "c", ElicitFields: ElicitFields{RequestID: "r", Action: "accept", ElicitContent: json.RawMessage(`{"name":"Ada"}`)}}
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		RequestID string          `json:"request_id"`
		Action    string          `json:"action"`
		Content   json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "r" || got.Action != "accept" || string(got.Content) != `{"name":"Ada"}` {
		t.Errorf("marshalled %s", b)
	}
}
