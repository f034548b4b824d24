package protocol

import (
	"reflect"
	"testing"
)

// What decodeSubscribe accepts, the general path reads the same (command,
// id, and Check's verdict); what it refuses goes to the general path.
func TestDecodeSubscribeMatchesJSON(t *testing.T) {
	accepted := 0
	for _, f := range []string{
		`{"op":"subscribe","id":"1","stream":"conversation","conversation_id":"01JXYZ","after":12345}`,
		`{"op":"subscribe","id":"2","stream":"all","after":0,"epoch":"e"}`,
		`{"id":"3","op":"subscribe","stream":"agent"}`,
		`{"op":"subscribe","id":"4","stream":"conversation","after":7}`,
		`{"op":"subscribe","id":"5","stream":"bogus"}`,
		`{"op":"subscribe","id":"6"}`,
		`{"op":"subscribe","id":"","stream":"all"}`,
		`{"op":"subscribe","id":"7","stream":"all","after":-1}`,
		`{"op":"subscribe","id":"8","stream":"all","after":01}`,
		`{"op":"subscribe","id":"9","stream":"all","after":1.5}`,
		`{"op":"subscribe","id":"10","stream":"all","after":1e3}`,
		`{"op":"subscribe","id":"11","stream":"all","after":1234567890123456789012}`,
		`{"op":"subscribe","id":"12","stream":"all","after":null}`,
		`{"op":"subscribe","id":"13","stream":"al\u006c"}`,
		`{"op":"subscribe","id":"14","stream":"all","stream":"agent"}`,
		`{"op":"subscribe","id":"15","Stream":"all"}`,
		`{"op":"subscribe","id":"16","stream":"all","x":1}`,
		`{"op":"subscribe","id":"17","stream":"all"} `,
		`{ "op":"subscribe","id":"18","stream":"all"}`,
		`{"op":"subscribe","id":"19","stream":"all",}`,
		`{"op":"subscribe","id":"20","stream":"all"`,
		`{"op":"unsubscribe","id":"21","sub":"s1"}`,
		`{"op":"ping","id":"22"}`,
		`{"op":"subscribe","id":23,"stream":"all"}`,
		`{"op":"subscribe","id":"24","conversation_id":"é","stream":"conversation"}`,
		`{"op":"subscribe","id":"25","stream":"conversation","conversation_id":"c","after":9,"epoch":"ep"}`,
		`{}`,
		``,
	} {
		b := []byte(f)
		cmd, id, err := Decode(b)
		want, wantID, wantErr := decodeGeneral(b)
		if _, ok := decodeSubscribe(b); ok {
			accepted++
		}
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, general path %v", f, err, wantErr)
		}
		if (id == nil) != (wantID == nil) || id != nil && *id != *wantID {
			t.Errorf("%s: id %v, general path %v", f, id, wantID)
		}
		if !reflect.DeepEqual(cmd, want) {
			t.Errorf("%s: %+v, general path %+v", f, cmd, want)
		}
	}
	if accepted != 7 {
		t.Errorf("the fast path took %d of the frames, want 7", accepted)
	}
}

// BenchmarkDecodeSubscribe: a resume's subscribe, as the storm's clients
// send it, by Decode and by the general path.
//
//	go test -run '^$' -bench DecodeSubscribe ./internal/protocol
func BenchmarkDecodeSubscribe(b *testing.B) {
	f := []byte(`{"op":"subscribe","id":"1","stream":"conversation","conversation_id":"01JXYZABCDEFGHJKMNPQRSTVWX","after":12345}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = Decode(f)
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = decodeGeneral(f)
		}
	})
}
