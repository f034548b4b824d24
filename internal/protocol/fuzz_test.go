package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// FuzzDecodeCommand checks the frame decoder on arbitrary input: it never
// panics, every failure is a bad_request with a message, and every
// accepted command survives a round trip unchanged. Seeds are in
// testdata/fuzz/FuzzDecodeCommand; CI runs
//
//	go test -run '^$' -fuzz '^FuzzDecodeCommand$' -fuzztime 20s ./internal/protocol
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{
		`{"op":"ping","id":"1"}`,
		`{"op":"subscribe","id":"2","stream":"all","after":0,"epoch":"e"}`,
		`{"op":"send","id":"3","conversation_id":"c","content":[{"type":"text","body":"hi"}],"client_id":"k"}`,
		`{"op":"rename","id":"4","conversation_id":"c","title":"t"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, id, err := Decode(b)
		if _, ok := decodeSubscribe(b); ok { // the fast path reads what the general one reads
			want, wantID, wantErr := decodeGeneral(b)
			if !reflect.DeepEqual(cmd, want) || *id != *wantID || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("%q: fast path %+v, %v; general path %+v, %v", b, cmd, err, want, wantErr)
			}
		}
		if err != nil {
			var e *agent.Error
			if !errors.As(err, &e) || e.Code != agent.CodeBadRequest || e.Message == "" {
				t.Fatalf("error %#v is not a bad_request with a message", err)
			}
			if _, merr := json.Marshal(e); merr != nil {
				t.Fatalf("error does not encode: %v", merr)
			}
			return
		}
		if id == nil || *id != cmd.ID {
			t.Fatalf("id %v, command id %q", id, cmd.ID)
		}
		again, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		cmd2, _, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded command %s rejected: %v", again, err)
		}
		a, _ := json.Marshal(cmd2)
		if string(a) != string(again) {
			t.Fatalf("round trip changed the command:\n%s\n%s", again, a)
		}
	})
}
