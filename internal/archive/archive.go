// Package archive is the import and export formats, without HTTP: agentik's
// own JSON (agent.Archive), written as it is read; Markdown for people; and
// the conversations.json of a ChatGPT data export, as it is or inside the
// export's ZIP. The server's routes and the command line use it.
package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// Each calls f with every message of one conversation in order, and stops
// at f's first error.
type Each func(f func(agent.Message) error) error

// WriteStart writes the start of an agent.Archive document, up to its
// first conversation: the bytes json.Marshal would give.
func WriteStart(w io.Writer, exportedAt time.Time) error {
	_, err := fmt.Fprintf(w, `{"format":%q,"version":%d,"exported_at":%q,"conversations":[`, agent.ArchiveFormat, agent.ArchiveVersion, agent.FormatTime(exportedAt))
	return err
}

// WriteConversation writes one agent.ArchivedConversation, its messages
// streamed as each yields them, then its feedback (none: no field);
// first is false for every conversation of a document but its first.
func WriteConversation(w io.Writer, first bool, c agent.Conversation, each Each, feedback []agent.Feedback) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	start := `{"conversation":`
	if !first {
		start = "," + start
	}
	if _, err := io.WriteString(w, start); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `,"messages":[`); err != nil {
		return err
	}
	n := 0
	err = each(func(m agent.Message) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if n > 0 {
			b = append([]byte{','}, b...)
		}
		n++
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, "]"); err != nil {
		return err
	}
	if len(feedback) > 0 {
		b, err := json.Marshal(feedback)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, `,"feedback":`); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "}")
	return err
}

// WriteEnd ends an agent.Archive document after its conversations, with
// the exporter's long-term memory when there is any.
func WriteEnd(w io.Writer, memory []agent.ArchivedMemory) error {
	if _, err := io.WriteString(w, "]"); err != nil {
		return err
	}
	if len(memory) > 0 {
		b, err := json.Marshal(memory)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, `,"memory":`); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "}\n")
	return err
}

// Parse reads an import: agentik JSON (conversations and memory) or
// ChatGPT's conversations.json, told apart by the first byte ({ or [). A
// ZIP is unpacked first (UnzipConversations).
func Parse(body []byte) ([]agent.ImportConversation, []agent.ArchivedMemory, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil, agent.Errorf(agent.CodeBadRequest, "the body is empty: send agentik JSON or a ChatGPT conversations.json")
	}
	if body[0] == '[' {
		convs, err := parseChatGPT(body)
		return convs, nil, err
	}
	var a agent.Archive
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, nil, agent.Errorf(agent.CodeBadRequest, "the body is neither agentik JSON nor a ChatGPT conversations.json: %s", protocol.JSONProblem(body, err))
	}
	if a.Format != agent.ArchiveFormat {
		return nil, nil, agent.Errorf(agent.CodeBadRequest, "format must be %q (an agentik export), got %q", agent.ArchiveFormat, agent.Shorten(a.Format, 40))
	}
	if a.Version < 1 || a.Version > agent.ArchiveVersion {
		return nil, nil, agent.Errorf(agent.CodeBadRequest, "version %d of the agentik format is not known to this server (it reads 1 to %d)", a.Version, agent.ArchiveVersion)
	}
	out := make([]agent.ImportConversation, len(a.Conversations))
	for i, c := range a.Conversations {
		if c.Conversation.ID == "" {
			return nil, nil, agent.Errorf(agent.CodeBadRequest, "conversation %d has no id", i)
		}
		out[i] = agent.ImportConversation{
			Source: "agentik:" + c.Conversation.ID, Title: c.Conversation.Title,
			CreatedAt: c.Conversation.CreatedAt, UpdatedAt: c.Conversation.UpdatedAt, Messages: c.Messages, Head: c.Conversation.Head,
			Settings: settings(c.Conversation),
		}
	}
	return out, a.Memory, nil
}

// settings are the settings an exported conversation carries.
func settings(c agent.Conversation) agent.Settings {
	var s agent.Settings
	if c.Model != "" {
		s.Model = &c.Model
	}
	if c.SystemPrompt != "" {
		s.SystemPrompt = &c.SystemPrompt
	}
	s.Params = c.Params
	return s
}
