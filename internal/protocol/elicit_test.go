package protocol

import (
	"encoding/json"
	"testing"
)

// TestElicitCommandRoundTrip: an elicit frame's content is the form's
// object (not a send's parts); it survives Marshal and Decode.
func TestElicitCommandRoundTrip(t *testing.T) {
	cmd := Command{Op: OpElicit, ID: "1", ConversationID: "c", ElicitFields: ElicitFields{RequestID: "r", Action: "accept", ElicitContent: json.RawMessage(`{"name":"Ada"}`)}}
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(%s): %v", b, err)
	}
	if got.RequestID != "r" || got.Action != "accept" || string(got.ElicitContent) != `{"name":"Ada"}` {
		t.Errorf("decoded %+v from %s", got.ElicitFields, b)
	}
	if _, _, err := Decode([]byte(`{"op":"elicit","id":"2","conversation_id":"c","action":"accept"}`)); err == nil {
		t.Error("an elicit without request_id is accepted")
	}
}
