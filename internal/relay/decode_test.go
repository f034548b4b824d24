package relay

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// tokens is n words " t1 t2 …", a fake model's answer.
func tokens(n int) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		sb.WriteString(" t" + strconv.Itoa(i))
	}
	return sb.String()
}

// appendEvent is an append_text event of text as the store's writer
// encodes it.
func appendEvent(t testing.TB, text string) agent.Encoded {
	t.Helper()
	e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: 42, ID: agent.NewID(), Date: time.Date(2026, 12, 1, 23, 10, 34, 146e6, time.UTC),
		ConversationID: agent.NewID(), Owner: "local", Event: &agent.Event{Type: agent.EventAppendText, Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDecodeMatchesCodec: Decode gives the codec's event for every event,
// by the scan for the append_text events the codec writes (plain text,
// escapes, any UTF-8) and by the codec for the rest (other types, other
// layouts, broken JSON: the same error).
func TestDecodeMatchesCodec(t *testing.T) {
	same := func(name string, e agent.Encoded, fast bool) {
		t.Helper()
		want, werr := e.Decode()
		got, gerr := Decode(&e)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, the codec's %v", name, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v (event %+v), the codec's %+v (event %+v)", name, got, got.Event, want, want.Event)
		}
		if _, ok := appendText(e.JSON); ok != fast {
			t.Errorf("%s: read by the scan: %v, want %v (%s)", name, ok, fast, e.JSON)
		}
	}
	texts := []string{
		" t1", tokens(2000), "", "line\nbreak", `quote " and \ backslash`, "<b>&amp;</b>", "tab\there",
		"é ü 日本語 🙂", "\u2028\u2029", "\x00\x1f control", "bad utf-8 \xff\xfe", "\"", "\\", "}}", `","x":"y`,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 { // random bytes, printable or not
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, text := range texts {
		same("append_text "+agent.Shorten(text, 20), appendEvent(t, text), true)
	}

	e := appendEvent(t, "x")
	stored := func(json string) agent.Encoded {
		return agent.StoredEvent(e.Seq, e.ID, agent.KindConversation, e.ConversationID, []byte(json))
	}
	head := `{"type":"conversation","seq":42,"id":"` + e.ID + `","date":"2026-12-01T23:10:34.146Z","conversation_id":"` + e.ConversationID + `","event":`
	for name, json := range map[string]string{
		"another field":       head + `{"type":"append_text","text":"a","extra":1}}`,
		"another field first": head + `{"type":"append_text","extra":1,"text":"a"}}`,
		"escaped id":          strings.Replace(head, `"id":"`, `"id":"\u0030`, 1) + `{"type":"append_text","text":"a"}}`,
		"an offset date":      strings.Replace(head, "146Z", "146+02:00", 1) + `{"type":"append_text","text":"a"}}`,
		"spaces":              head + `{"type":"append_text", "text":"a"}}`,
		"no date":             strings.Replace(head, `"2026-12-01T23:10:34.146Z"`, `""`, 1) + `{"type":"append_text","text":"a"}}`,
		"a bad date":          strings.Replace(head, "2026-12-01", "2026-13-01", 1) + `{"type":"append_text","text":"a"}}`,
		"seq 0":               strings.Replace(head, `"seq":42`, `"seq":0`, 1) + `{"type":"append_text","text":"a"}}`,
		"a broken string":     head + `{"type":"append_text","text":"a\q"}}`,
		"cut short":           head + `{"type":"append_text","text":"a`,
	} {
		fast := name == "an offset date" || name == "no date"
		same(name, stored(json), fast)
	}

	other, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: 43, ID: agent.NewID(), ConversationID: "c",
		Event: &agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageAssistant, ID: "m", Content: []agent.Content{agent.Text("t1 t2")}}}})
	if err != nil {
		t.Fatal(err)
	}
	same("a message", other, false)
}

// TestMessage: the scan of a message event's head gives the decoded
// message's type and id, and declines any other event or layout.
func TestMessage(t *testing.T) {
	for _, m := range []agent.Message{
		{Type: agent.MessageUser, ID: agent.NewID(), Content: []agent.Content{agent.Text("hi")}},
		{Type: agent.MessageAssistant, ID: agent.NewID(), Content: []agent.Content{agent.Text(tokens(1000))}},
		{Type: agent.MessageToolCall, ID: "m\"quoted", CallID: "k", Name: "n"},
	} {
		e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: 5, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: agent.EventMessage, Message: &m}})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		typ, id, ok := Message(&e)
		if scannable := !strings.ContainsAny(m.ID, `"\\`); ok != scannable {
			t.Errorf("%s %q: read by the scan %v, want %v", m.Type, m.ID, ok, scannable)
		}
		if ok && (typ != ev.Event.Message.Type || id != ev.Event.Message.ID) {
			t.Errorf("scanned %q %q, decoded %q %q", typ, id, ev.Event.Message.Type, ev.Event.Message.ID)
		}
	}
	if _, _, ok := Message(ptr(appendEvent(t, "x"))); ok {
		t.Error("an append_text event read as a message")
	}
	head := `{"type":"conversation","seq":5,"id":"x","date":"2026-12-01T00:00:00Z","conversation_id":"c","event":`
	e := agent.StoredEvent(5, "x", agent.KindConversation, "c", []byte(head+`{"type":"message","message":{"id":"m","type":"user_message","content":[]}}}`))
	if _, _, ok := Message(&e); ok {
		t.Error("a message laid out otherwise (id first) read by the scan")
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkDecode: one append_text event of a fast stream (the runner
// merges a 100,000-token answer into ~150 of them, ~5,000 bytes each).
func BenchmarkDecode(b *testing.B) {
	e := appendEvent(b, tokens(700))
	b.Run("codec", func(b *testing.B) {
		b.SetBytes(int64(len(e.JSON)))
		for b.Loop() {
			if _, err := e.Decode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(e.JSON)))
		for b.Loop() {
			if _, err := Decode(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
