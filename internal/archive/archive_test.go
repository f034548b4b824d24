package archive_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/archive"
)

func each(ms []agent.Message) archive.Each {
	return func(f func(agent.Message) error) error {
		for _, m := range ms {
			if err := f(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestWriteIsMarshal: the streamed document is the bytes json.Marshal
// gives the agent.Archive (with the wire's millisecond dates), and Parse
// reads it back.
func TestWriteIsMarshal(t *testing.T) {
	// A millisecond ending in zero too: time.Time's own JSON drops it.
	for _, ns := range []int{123456789, 120000000} {
		t.Run(fmt.Sprint(ns), func(t *testing.T) { testWriteIsMarshal(t, time.Date(2026, 12, 2, 6, 0, 0, ns, time.UTC)) })
	}
}

func testWriteIsMarshal(t *testing.T, at time.Time) {
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	model := "m1"
	a := agent.Archive{Format: agent.ArchiveFormat, Version: agent.ArchiveVersion, ExportedAt: at.Truncate(time.Millisecond)}
	for i, title := range []string{"first", "second"} {
		c := agent.Conversation{ID: "c" + title, Title: title, CreatedAt: day, UpdatedAt: day, Model: model}
		var ms []agent.Message
		for j := range i + 1 {
			ms = append(ms, agent.Message{ID: "m" + title + string(rune('a'+j)), Type: agent.MessageUser, Date: day,
				Content: []agent.Content{{Type: agent.ContentText, Body: "hello " + title}}})
		}
		a.Conversations = append(a.Conversations, agent.ArchivedConversation{Conversation: c, Messages: ms})
	}
	a.Memory = []agent.ArchivedMemory{{Agent: "default", MemoryBlock: agent.MemoryBlock{Label: "notes", Value: "likes tea"}}}
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := archive.WriteStart(&b, at); err != nil {
		t.Fatal(err)
	}
	for i, c := range a.Conversations {
		if err := archive.WriteConversation(&b, i == 0, c.Conversation, each(c.Messages), c.Feedback, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := archive.WriteEnd(&b, a.Memory); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSuffix(b.String(), "\n"); got != string(want) {
		t.Fatalf("streamed:\n%s\nmarshalled:\n%s", got, want)
	}
	if !strings.Contains(b.String(), `"exported_at":"`+at.Format("2006-01-02T15:04:05.000Z")+`"`) {
		t.Errorf("exported_at is not the wire's date (milliseconds, UTC): %s", b.String()[:120])
	}
	convs, mem, err := archive.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 2 || convs[1].Source != "agentik:csecond" || len(convs[1].Messages) != 2 || *convs[0].Settings.Model != model {
		t.Errorf("parsed back: %+v", convs)
	}
	if len(mem) != 1 || mem[0].Value != "likes tea" {
		t.Errorf("memory parsed back: %+v", mem)
	}
}

// TestWriteEmbedsFiles: with FileBytes, a file part the exporter may
// read is written as json.Marshal writes the part with the file's bytes
// (base64, with its name and media type, no file_id), one it may not
// keeps its reference, and a read that fails ends the export.
func TestWriteEmbedsFiles(t *testing.T) {
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	doc := []byte("# Plan\n\nsecret \"quoted\" <b>")
	ref := func(id, name string) agent.Content {
		return agent.Content{Type: agent.ContentFile, FileID: id, Name: name, Mime: "text/markdown"}
	}
	m := agent.Message{ID: "m1", Type: agent.MessageUser, Date: day, Content: []agent.Content{
		{Type: agent.ContentText, Body: `look: {"type":"file","file_id":"x-1"}`}, ref("file-a", "old.md"), ref("file-b", "b.md"), ref("file-a", "old.md"),
	}}
	reads := 0
	files := func(id string) (agent.File, []byte, bool, error) {
		reads++
		switch id {
		case "file-a":
			return agent.File{ID: id, Name: "plan.md", MediaType: "text/markdown"}, doc, true, nil
		case "file-b":
			return agent.File{}, nil, false, nil // not the exporter's
		}
		return agent.File{}, nil, false, errors.New("disk on fire")
	}
	var b bytes.Buffer
	if err := archive.WriteConversation(&b, true, agent.Conversation{ID: "c"}, each([]agent.Message{m, m}), nil, files); err != nil {
		t.Fatal(err)
	}
	want := m
	want.Content = slices.Clone(m.Content)
	embedded := agent.Content{Type: agent.ContentFile, Name: "plan.md", Mime: "text/markdown", Data: base64.StdEncoding.EncodeToString(doc)}
	want.Content[1], want.Content[3] = embedded, embedded
	wantMsg, _ := json.Marshal(want)
	wantConv, _ := json.Marshal(agent.Conversation{ID: "c"})
	if got, want := b.String(), `{"conversation":`+string(wantConv)+`,"messages":[`+string(wantMsg)+","+string(wantMsg)+"]}"; got != want {
		t.Fatalf("written:\n%s\nwant:\n%s", got, want)
	}
	if reads != 6 {
		t.Errorf("%d file reads, want one per part (6)", reads)
	}
	var a agent.ArchivedConversation
	if err := json.Unmarshal(b.Bytes(), &a); err != nil || a.Messages[0].Content[1].Data == "" || a.Messages[0].Content[2].FileID != "file-b" {
		t.Errorf("read back: %+v %v", a, err)
	}

	m.Content = append(m.Content, ref("file-c", "c.md"))
	b.Reset()
	if err := archive.WriteConversation(&b, true, agent.Conversation{ID: "c"}, each([]agent.Message{m}), nil, files); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("a failed read: %v", err)
	}
}

// TestParseRefuses: what is not an import says what to send, with a
// typed code.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ body, code, says string }{
		{"  ", agent.CodeBadRequest, "the body is empty"},
		{`{"format":"other","version":1}`, agent.CodeBadRequest, `format must be "agentik"`},
		{`{"format":"agentik","version":9}`, agent.CodeBadRequest, "version 9"},
		{`{"format":"agentik","version":1,"conversations":[{"conversation":{}}]}`, agent.CodeBadRequest, "conversation 0 has no id"},
		{`{"format":`, agent.CodeBadRequest, "neither agentik JSON nor a ChatGPT conversations.json"},
		{`[{"title":"x"}]`, agent.CodeBadRequest, "ChatGPT conversation 0 has no id"},
	} {
		_, _, err := archive.Parse([]byte(c.body))
		if agent.ErrorCode(err) != c.code || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q) = %v, want %s saying %q", c.body, err, c.code, c.says)
		}
	}
}

// TestMarkdown: a title, then each message under who wrote it.
func TestMarkdown(t *testing.T) {
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	md := archive.Markdown(agent.Conversation{Title: "a\ntitle", CreatedAt: day}, []agent.Message{
		{Type: agent.MessageUser, Date: day, Content: []agent.Content{{Type: agent.ContentText, Body: "hi"}}},
		{Type: agent.MessageToolCall, Date: day, Name: "f", Arguments: "```"},
	})
	for _, want := range []string{"# a title\n", "1 messages", "2 messages", "## User · 2026-12-01T10:00:00.000Z\n\nhi\n", "````json\n```\n````"} {
		if want == "1 messages" {
			if strings.Contains(md, want) {
				t.Errorf("Markdown counts wrong:\n%s", md)
			}
			continue
		}
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}
