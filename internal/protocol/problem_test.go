package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/protocol"
)

// TestJSONProblem: a refused document is described by where and what was
// expected, never by the decoder's own words.
func TestJSONProblem(t *testing.T) {
	type doc struct {
		Title string `json:"title"`
		Items []struct {
			N int `json:"n"`
		} `json:"items"`
		At time.Time `json:"at"`
	}
	for _, c := range []struct{ body, want string }{
		{`nope`, `line 1, column 2: expected the word null (a bare word must be true, false or null; text goes in double quotes), found 'o'`},
		{"{\n  \"title\": \"x\"\n  \"items\": []\n}", `line 3, column 3: expected a comma (,) or the } that closes the object, found '"'`},
		{`{"title":"x",}`, `line 1, column 14: expected a key in double quotes, like "name", found '}' (JSON allows no comma after the last item)`},
		{`{"items":[{"n":1},]}`, `line 1, column 19: expected a value (a string in double quotes, a number, an object, an array, true, false or null), found ']' (JSON allows no comma after the last item)`},
		{`{'title':1}`, `line 1, column 2: expected a key in double quotes, like "name", found '\''`},
		{`{"title" "x"}`, `line 1, column 10: expected a colon (:) after the key, found '"'`},
		{`{"title":"é` + "\x01" + `"}`, `line 1, column 12: expected text or the closing quote`},
		{`{"title":"x"} 5`, `line 1, column 15: expected nothing more: the document is one value, and it has ended, found '5'`},
		{`{"items":[{"n":1}`, `the document ends early (line 1, column 17): an object, array or string is not closed; is the file complete?`},
		{`{"title":5}`, `field "title" must be a string, not a number (line 1, column 10)`},
		{`{"items":[{"n":1.5}]}`, `field "items.n" must be a whole number in range, not the number 1.5 (line 1, column 18)`},
		{`[1]`, `expected an object, found an array (line 1, column 1)`},
		{`{"at":"yesterday"}`, `a time must be written as in RFC 3339, like "2026-01-02T15:04:05Z", not "yesterday"`},
	} {
		var v doc
		err := json.Unmarshal([]byte(c.body), &v)
		if err == nil {
			t.Fatalf("%q decoded", c.body)
		}
		got := protocol.JSONProblem([]byte(c.body), err)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.body, got, c.want)
		}
		if strings.Contains(got, "invalid character") || strings.Contains(got, "literal") || strings.Contains(got, "Go ") {
			t.Errorf("%q: %s passes on the decoder's words", c.body, got)
		}
	}
	dec := json.NewDecoder(strings.NewReader(`{"titel":"x"}`))
	dec.DisallowUnknownFields()
	var v doc
	if got := protocol.JSONProblem([]byte(`{"titel":"x"}`), dec.Decode(&v)); got != `there is no field "titel"` {
		t.Errorf("unknown field: %s", got)
	}
}
