package agent_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/google/go-cmp/cmp"
)

var date = time.Date(2026, 11, 30, 10, 0, 0, 123_000_000, time.UTC)

// TestWireJSON pins the exact JSON of every wire type (DESIGN.md §3) and
// checks that decoding gives the value back.
func TestWireJSON(t *testing.T) {
	t.Parallel()
	usage := &agent.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"text", agent.Text("hi"), `{"type":"text","body":"hi"}`},
		{"image", agent.Content{Type: "image", Mime: "image/png", Data: "AAAA"}, `{"type":"image","mime":"image/png","data":"AAAA"}`},
		{"user", agent.Message{Type: agent.MessageUser, ID: "m1", ConversationID: "c1", Seq: 5, Date: date, Content: []agent.Content{agent.Text("hi")}, ClientID: "k"},
			`{"type":"user_message","id":"m1","conversation_id":"c1","seq":5,"date":"2026-11-30T10:00:00.123Z","content":[{"type":"text","body":"hi"}],"client_id":"k"}`},
		{"assistant", agent.Message{Type: agent.MessageAssistant, ID: "m2", ConversationID: "c1", Seq: 9, Date: date, Content: []agent.Content{agent.Text("yo")}, Reasoning: "hmm", Interrupted: true, Usage: usage},
			`{"type":"assistant_message","id":"m2","conversation_id":"c1","seq":9,"date":"2026-11-30T10:00:00.123Z","content":[{"type":"text","body":"yo"}],"reasoning":"hmm","interrupted":true,"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`},
		{"assistant empty", agent.Message{Type: agent.MessageAssistant, ID: "m2", ConversationID: "c1", Seq: 9, Date: date, Content: []agent.Content{}},
			`{"type":"assistant_message","id":"m2","conversation_id":"c1","seq":9,"date":"2026-11-30T10:00:00.123Z","content":[]}`},
		{"tool_call", agent.Message{Type: agent.MessageToolCall, ID: "m3", ConversationID: "c1", Seq: 10, Date: date, CallID: "call1", Name: "fs__read", Arguments: `{"p":1}`},
			`{"type":"tool_call","id":"m3","conversation_id":"c1","seq":10,"date":"2026-11-30T10:00:00.123Z","call_id":"call1","name":"fs__read","arguments":"{\"p\":1}"}`},
		{"tool_result", agent.Message{Type: agent.MessageToolResult, ID: "m4", ConversationID: "c1", Seq: 11, Date: date, CallID: "call1", Name: "fs__read", Result: "", IsError: true},
			`{"type":"tool_result","id":"m4","conversation_id":"c1","seq":11,"date":"2026-11-30T10:00:00.123Z","call_id":"call1","name":"fs__read","result":"","is_error":true}`},
		{"error message", agent.Message{Type: agent.MessageError, ID: "m5", ConversationID: "c1", Seq: 12, Date: date, Error: "boom", Code: "model_error"},
			`{"type":"error","id":"m5","conversation_id":"c1","seq":12,"date":"2026-11-30T10:00:00.123Z","message":"boom","code":"model_error"}`},
		{"summary", agent.Message{Type: agent.MessageSummary, ID: "m6", ConversationID: "c1", Seq: 13, Date: date, Summary: "they talked", Replaces: 12, TokensBefore: 7000, TokensAfter: 900},
			`{"type":"summary_message","id":"m6","conversation_id":"c1","seq":13,"date":"2026-11-30T10:00:00.123Z","summary":"they talked","replaces":12,"tokens_before":7000,"tokens_after":900}`},
		{"summary span", agent.Message{Type: agent.MessageSummary, ID: "m7", ConversationID: "c1", Seq: 14, Date: date, Summary: "they talked", Replaces: 4, TokensBefore: 700, TokensAfter: 90,
			KeptID: "m5", FirstID: "m1", LastID: "m3", FirstText: "Plan a trip", LastText: "And the weather?"},
			`{"type":"summary_message","id":"m7","conversation_id":"c1","seq":14,"date":"2026-11-30T10:00:00.123Z","summary":"they talked","replaces":4,"tokens_before":700,"tokens_after":90,"kept_id":"m5","first_id":"m1","last_id":"m3","first_text":"Plan a trip","last_text":"And the weather?"}`},
		{"conversation with context", agent.Conversation{ID: "c1", Title: "t", CreatedAt: date, UpdatedAt: date, Context: &agent.ContextSize{Tokens: 900, Window: 8192}},
			`{"id":"c1","title":"t","temp":false,"created_at":"2026-11-30T10:00:00.123Z","updated_at":"2026-11-30T10:00:00.123Z","message_count":0,"running":false,"context":{"tokens":900,"window":8192}}`},
		{"start_reasoning", agent.Event{Type: agent.EventStartReasoning}, `{"type":"start_reasoning"}`},
		{"append_text", agent.Event{Type: agent.EventAppendText, Text: "a"}, `{"type":"append_text","text":"a"}`},
		{"append_image", agent.Event{Type: agent.EventAppendImage, Mime: "image/png", Data: "AA"}, `{"type":"append_image","mime":"image/png","data":"AA"}`},
		{"ev tool_call", agent.Event{Type: agent.EventToolCall, CallID: "c", Name: "n", Arguments: "{}"}, `{"type":"tool_call","call_id":"c","name":"n","arguments":"{}"}`},
		{"ev tool_result", agent.Event{Type: agent.EventToolResult, CallID: "c", Name: "n", Result: "r"}, `{"type":"tool_result","call_id":"c","name":"n","result":"r"}`},
		{"ev error", agent.Event{Type: agent.EventError, Error: "bad", Code: "model_error"}, `{"type":"error","message":"bad","code":"model_error"}`},
		{"interrupted", agent.Event{Type: agent.EventInterrupted}, `{"type":"interrupted"}`},
		{"end", agent.Event{Type: agent.EventEnd, Usage: usage}, `{"type":"end","usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`},
		{"end bare", agent.Event{Type: agent.EventEnd}, `{"type":"end"}`},
		{"created", agent.AgentEvent{Type: agent.AgentCreated, ConversationID: "c1", Title: "t"}, `{"type":"created","conversation_id":"c1","title":"t"}`},
		{"deleted", agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: "c1"}, `{"type":"deleted","conversation_id":"c1"}`},
		{"renamed", agent.AgentEvent{Type: agent.AgentRenamed, ConversationID: "c1", Title: ""}, `{"type":"renamed","conversation_id":"c1","title":""}`},
		{"all agent", agent.AllEvent{Kind: agent.KindAgent, Seq: 1, ID: "e1", Date: date, ConversationID: "c1", Agent: &agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: "c1"}},
			`{"type":"agent","seq":1,"id":"e1","date":"2026-11-30T10:00:00.123Z","event":{"type":"deleted","conversation_id":"c1"}}`},
		{"all conversation", agent.AllEvent{Kind: agent.KindConversation, Seq: 2, ID: "e2", Date: date, ConversationID: "c1", Event: &agent.Event{Type: agent.EventEnd}},
			`{"type":"conversation","seq":2,"id":"e2","date":"2026-11-30T10:00:00.123Z","conversation_id":"c1","event":{"type":"end"}}`},
		{"conversation", agent.Conversation{ID: "c1", Title: "t", CreatedAt: date, UpdatedAt: date, MessageCount: 2, Running: true, TurnSeq: 7},
			`{"id":"c1","title":"t","temp":false,"created_at":"2026-11-30T10:00:00.123Z","updated_at":"2026-11-30T10:00:00.123Z","message_count":2,"running":true,"turn_seq":7}`},
		{"error", agent.Errorf(agent.CodeBusy, "wait"), `{"code":"busy","message":"wait"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b); got != tt.want {
				t.Fatalf("marshal\n got %s\nwant %s", got, tt.want)
			}
			back := newOf(tt.v)
			if err := json.Unmarshal(b, back); err != nil {
				t.Fatal(err)
			}
			b2, _ := json.Marshal(back)
			if got := string(b2); got != tt.want {
				t.Fatalf("round trip\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func newOf(v any) any {
	switch v.(type) {
	case agent.Content:
		return new(agent.Content)
	case agent.Message:
		return new(agent.Message)
	case agent.Event:
		return new(agent.Event)
	case agent.AgentEvent:
		return new(agent.AgentEvent)
	case agent.AllEvent:
		return new(agent.AllEvent)
	case agent.Conversation:
		return new(agent.Conversation)
	case *agent.Error:
		return new(agent.Error)
	}
	panic("unknown type")
}

// TestUnknownTypesSurvive checks forward compatibility: a type this
// version does not know decodes without error and encodes back unchanged.
func TestUnknownTypesSurvive(t *testing.T) {
	t.Parallel()
	docs := []struct {
		doc string
		v   any
	}{
		{`{"type":"audio","mime":"audio/ogg","seconds":3}`, new(agent.Content)},
		{`{"type":"citation","id":"m","seq":1,"url":"x"}`, new(agent.Message)},
		{`{"type":"progress","percent":50}`, new(agent.Event)},
		{`{"type":"archived","conversation_id":"c"}`, new(agent.AgentEvent)},
		{`{"type":"system","seq":4,"note":"hi"}`, new(agent.AllEvent)},
		{`{"type":"conversation","seq":4,"id":"e","date":"2026-11-30T10:00:00.123Z","conversation_id":"c","event":{"type":"progress","percent":5}}`, new(agent.AllEvent)},
	}
	for _, d := range docs {
		if err := json.Unmarshal([]byte(d.doc), d.v); err != nil {
			t.Fatalf("%s: %v", d.doc, err)
		}
		b, err := json.Marshal(d.v)
		if err != nil {
			t.Fatalf("%s: %v", d.doc, err)
		}
		if diff := cmp.Diff(d.doc, string(b)); diff != "" {
			t.Errorf("re-encoded differently (-want +got):\n%s", diff)
		}
	}
}

func code(err error) string {
	if err == nil {
		return ""
	}
	return agent.ErrorCode(err)
}

// TestWireRoundTrip decodes the encoding of a value of every known type of
// every wire type, with each field its type carries set, and wants the
// value back: a field added to a struct without its wire tag, or with a
// tag naming the wrong types, fails here.
func TestWireRoundTrip(t *testing.T) {
	t.Parallel()
	usage := &agent.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
	head := agent.Message{ID: "m", ConversationID: "c", Seq: 3, Date: date}
	msg := func(m agent.Message) agent.Message {
		m.ID, m.ConversationID, m.Seq, m.Date = head.ID, head.ConversationID, head.Seq, head.Date
		return m
	}
	user := msg(agent.Message{Type: agent.MessageUser, Content: []agent.Content{agent.Text("hi")}, ClientID: "k"})
	values := []any{
		agent.Text("hi"),
		agent.Content{Type: agent.ContentImage, Mime: "image/png", Data: "AA=="},
		user,
		msg(agent.Message{Type: agent.MessageAssistant, Content: []agent.Content{agent.Text("yo")}, Reasoning: "r", Interrupted: true, Usage: usage}),
		msg(agent.Message{Type: agent.MessageToolCall, CallID: "c1", Name: "n", Arguments: "{}"}),
		msg(agent.Message{Type: agent.MessageToolResult, CallID: "c1", Name: "n", Result: "r", IsError: true}),
		msg(agent.Message{Type: agent.MessageError, Error: "boom", Code: agent.CodeInternal}),
		agent.Event{Type: agent.EventMessage, Message: &user},
		agent.Event{Type: agent.EventStartReasoning},
		agent.Event{Type: agent.EventStartResponse},
		agent.Event{Type: agent.EventAppendText, Text: "t"},
		agent.Event{Type: agent.EventAppendImage, Mime: "image/png", Data: "AA=="},
		agent.Event{Type: agent.EventToolCall, CallID: "c1", Name: "n", Arguments: "{}"},
		agent.Event{Type: agent.EventToolResult, CallID: "c1", Name: "n", Result: "r", IsError: true},
		agent.Event{Type: agent.EventError, Error: "bad", Code: agent.CodeModelError},
		agent.Event{Type: agent.EventInterrupted},
		agent.Event{Type: agent.EventEnd, Usage: usage},
		agent.AgentEvent{Type: agent.AgentCreated, ConversationID: "c", Title: "t"},
		agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: "c"},
		agent.AgentEvent{Type: agent.AgentRenamed, ConversationID: "c", Title: "t"},
		agent.AgentEvent{Type: agent.AgentTurnStarted, ConversationID: "c"},
		agent.AgentEvent{Type: agent.AgentTurnEnded, ConversationID: "c"},
		agent.AgentEvent{Type: agent.AgentToolServer, Server: &agent.ToolServer{Name: "fs", Transport: "stdio", State: agent.ToolServerReady, Tools: []string{"fs__read"}}},
		agent.AllEvent{Kind: agent.KindAgent, Seq: 1, ID: "e", Date: date, ConversationID: "c", Agent: &agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: "c"}},
		agent.AllEvent{Kind: agent.KindConversation, Seq: 2, ID: "e", Date: date, ConversationID: "c", Event: &agent.Event{Type: agent.EventAppendText, Text: "x"}},
		agent.Conversation{ID: "c", Title: "t", Temp: true, CreatedAt: date, UpdatedAt: date, MessageCount: 4, Running: true, TurnSeq: 9},
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		back := newOf(v)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got := reflect.ValueOf(back).Elem().Interface()
		if diff := cmp.Diff(v, got); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", b, diff)
		}
	}
}

// TestWireRejectsMissingInner checks that an event whose type needs an
// inner value fails to decode without it instead of leaving a nil.
func TestWireRejectsMissingInner(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"type":"message"}`,
	} {
		if err := json.Unmarshal([]byte(doc), new(agent.Event)); err == nil {
			t.Errorf("%s: decoded without error", doc)
		}
	}
	if err := json.Unmarshal([]byte(`{"type":"agent","seq":1,"id":"e","date":""}`), new(agent.AllEvent)); err == nil {
		t.Error("agent event without event: decoded without error")
	}
}

// TestWireTagsEveryField checks that every field of a wire type says how it
// crosses the wire, so a new field cannot be silently left out of the JSON.
func TestWireTagsEveryField(t *testing.T) {
	t.Parallel()
	for _, v := range []any{agent.Content{}, agent.Message{}, agent.Event{}, agent.AgentEvent{}, agent.AllEvent{}, agent.Conversation{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			if f := typ.Field(i); f.Tag.Get("wire") == "" {
				t.Errorf("%s.%s has no wire tag", typ.Name(), f.Name)
			}
		}
	}
}

// TestWireStringsAsEncodingJSON holds the encoder's own string path (plain
// ASCII written as is) to encoding/json's bytes for every kind of text:
// HTML characters, quotes, control bytes, DEL, non-ASCII, U+2028 and
// invalid UTF-8.
func TestWireStringsAsEncodingJSON(t *testing.T) {
	t.Parallel()
	texts := []string{"", " t17", "plain text, digits 0-9 and ~!@#$%^*()_+{}|:?", "a<b", "x>y", "&amp;", `say "hi"`, `back\slash`,
		"tab\tnew\nline", "\x00\x1f", "del\x7f", "héllo", "日本語", "\u2028\u2029", "bad \xff utf8", "emoji 😀"}
	for b := range 256 {
		texts = append(texts, "x"+string(rune(b))+"y", "x"+string([]byte{byte(b)})+"y")
	}
	for _, s := range texts {
		ev := agent.AllEvent{Kind: agent.KindConversation, ID: s, ConversationID: "c1", Seq: 7, Date: date,
			Event: &agent.Event{Type: agent.EventAppendText, Text: s}}
		got, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := json.Marshal(s)
		want := `{"type":"conversation","seq":7,"id":` + string(q) + `,"date":"` + agent.FormatTime(date) + `","conversation_id":"c1","event":{"type":"append_text","text":` + string(q) + `}}`
		if string(got) != want {
			t.Errorf("text %q:\n got %s\nwant %s", s, got, want)
		}
	}
}

// BenchmarkEncodeAppendText is what the store's writer pays to encode
// each streamed token's event once.
func BenchmarkEncodeAppendText(b *testing.B) {
	ev := agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: agent.NewID(), Seq: 123456, Date: date,
		Event: &agent.Event{Type: agent.EventAppendText, Text: " t17"}}
	for b.Loop() {
		if _, err := agent.EncodeRef(&ev); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeAsJSONMarshal holds Encode, which skips json.Marshal's pass
// over the codec's output, to json.Marshal's bytes.
func TestEncodeAsJSONMarshal(t *testing.T) {
	t.Parallel()
	evs := []agent.AllEvent{
		{Kind: agent.KindConversation, ID: "e<1>", ConversationID: "c&1", Seq: 3, Date: date, Event: &agent.Event{Type: agent.EventAppendText, Text: "a \"<b>\"\n\u2028"}},
		{Kind: agent.KindConversation, ID: "e2", ConversationID: "c1", Seq: 4, Date: date, Event: &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
			Type: agent.MessageUser, ID: "m1", ConversationID: "c1", Content: []agent.Content{agent.Text("x < y & z")}}}},
		{Kind: agent.KindAgent, ID: "e3", Seq: 5, Date: date, Agent: &agent.AgentEvent{Type: agent.AgentRenamed, ConversationID: "c1", Title: "<i>t</i>"}},
	}
	var unknown, unknownInner agent.AllEvent
	if err := json.Unmarshal([]byte(`{"type":"future", "seq":6, "id":"e4", "x":"<&>"}`), &unknown); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"type":"conversation","seq":7,"id":"e5","date":"2026-11-30T10:00:00.123Z","conversation_id":"c1","event":{"type":"future", "x": "<&>" }}`), &unknownInner); err != nil {
		t.Fatal(err)
	}
	for _, ev := range append(evs, unknown, unknownInner) {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := agent.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.JSON) != string(want) {
			t.Errorf("Encode:\n got %s\nwant %s", got.JSON, want)
		}
	}
}
