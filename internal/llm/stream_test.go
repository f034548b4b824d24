package llm

import (
	"encoding/json"
	"reflect"
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

// chunkSeeds are chunks as servers send them: OpenAI, Ollama, vLLM, llama.cpp.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"Let me think"},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"reasoning":"hmm","content":null},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"line\nbreak \"quoted\" \u00e9"},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":1,"delta":{"content":"x"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"Content":"x"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
	`{"id":"c","created":-1.5e+3,"x":true,"y":false,"z":null,"choices":[{"index":0,"delta":{"content":"ok"}}]}  `,
	`{"choices":[{"index":0,"delta":{"content":42}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}},{"index":1,"delta":{"content":"y"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]}garbage`,
}

// The scanner of the common chunk gives what encoding/json gives, or
// declines.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast chunk
		if !fastChunk(raw, &fast) {
			return
		}
		var want chunk
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: the scanner read it, encoding/json refuses it: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%s:\nscanner       %+v\nencoding/json %+v", raw, fast, want)
		}
	})
}

// The common chunks take the fast path; the others decode as before.
func TestDecodeChunk(t *testing.T) {
	fast := 0
	for _, s := range chunkSeeds {
		var got, want chunk
		if fastChunk([]byte(s), &chunk{}) {
			fast++
		}
		errGot := decodeChunk([]byte(s), &got)
		errWant := json.Unmarshal([]byte(s), &want)
		if (errGot == nil) != (errWant == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %+v %v\nwant %+v %v", s, got, errGot, want, errWant)
		}
	}
	if fast < 6 {
		t.Errorf("%d of the common chunks took the fast path, want the 6 plain ones at least", fast)
	}
}
