package llm

import (
	"encoding/json"
	"testing"
)

// looseString reads a string as encoding/json does (the fast path for
// strings without escapes included), and anything else as empty.
func TestLooseString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"hello"`, "hello"},
		{`""`, ""},
		{`"héllo 🌍"`, "héllo 🌍"},
		{`"a\nb"`, "a\nb"},
		{`"quote \" inside"`, `quote " inside`},
		{`"\u00e9\\"`, `é\`},
		{`"<b>&amp;</b>"`, "<b>&amp;</b>"},
		{`null`, ""},
		{`42`, ""},
		{`{"x":1}`, ""},
		{`["a"]`, ""},
		{"\"bad \xff byte\"", "bad \ufffd byte"},
	} {
		var v struct {
			S looseString `json:"s"`
		}
		if err := json.Unmarshal([]byte(`{"s":`+tc.in+`}`), &v); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(v.S) != tc.want {
			t.Errorf("%s read as %q, want %q", tc.in, v.S, tc.want)
		}
	}
}

func FuzzLooseString(f *testing.F) {
	for _, s := range []string{"tok", "a\nb", `q"q`, "é", "\x00", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Skip()
		}
		var got looseString
		if err := got.UnmarshalJSON(b); err != nil || string(got) != want {
			t.Fatalf("%s read as %q, want %q", b, got, want)
		}
	})
}
