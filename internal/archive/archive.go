// Package archive is the import and export formats, without HTTP: agentik's
// own JSON (agent.Archive), written as it is read; Markdown for people; and
// the conversations.json of a ChatGPT data export, as it is or inside the
// export's ZIP. The server's routes and the command line use it.
package archive

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
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

// FileBytes reads the file a file part names, for an export that carries
// files' bytes: the file (its name and media type) and its bytes, read as
// the exporter may read them. ok false leaves the part the reference it
// is (a file the exporter may not read, or one deleted since); an error
// ends the export.
type FileBytes func(id string) (f agent.File, data []byte, ok bool, err error)

// WriteConversation writes one agent.ArchivedConversation, its messages
// streamed as each yields them, then its feedback (none: no field);
// first is false for every conversation of a document but its first.
// With files, each file part carries its file's bytes (writeMessage);
// without, it is the reference {"type":"file","file_id","name","mime"}.
func WriteConversation(w io.Writer, first bool, c agent.Conversation, each Each, feedback []agent.Feedback, files FileBytes) error {
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
		if n > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		n++
		return writeMessage(w, m, files)
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

// writeMessage writes m as json.Marshal does, except that with files each
// file part naming a file the exporter may read is written as an import
// takes a file's bytes, {"type":"file","mime","data","name"} (no file_id:
// the importer's file is another): the file is read when its part is
// written and its base64 encoded straight into w, so a message's
// encoding never holds a file, and the export one file at a time.
func writeMessage(w io.Writer, m agent.Message, files FileBytes) error {
	var parts []agent.Content // the file parts, in order
	var nonce string
	if files != nil {
		for i, p := range m.Content {
			if p.Type != agent.ContentFile || p.FileID == "" {
				continue
			}
			if parts == nil {
				m.Content, nonce = slices.Clone(m.Content), rand.Text()
			}
			parts = append(parts, p)
			m.Content[i] = standIn(nonce, len(parts))
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	// Each stand-in's bytes are found only where the part is: inside a
	// JSON string a quote is escaped, and no text knows the nonce.
	for i, p := range parts {
		s, err := json.Marshal(standIn(nonce, i+1))
		if err != nil {
			return err
		}
		at := bytes.Index(b, s)
		if at < 0 {
			return fmt.Errorf("export: file part %d of message %s is not where it was encoded", i, m.ID)
		}
		if _, err := w.Write(b[:at]); err != nil {
			return err
		}
		if err := writeFilePart(w, p, files); err != nil {
			return err
		}
		b = b[at+len(s):]
	}
	_, err = w.Write(b)
	return err
}

// standIn is the content part writeMessage encodes in place of its nth
// file part.
func standIn(nonce string, n int) agent.Content {
	return agent.Content{Type: agent.ContentFile, FileID: nonce + "-" + strconv.Itoa(n)}
}

// dataField is how a file part's data starts in its encoding, with one
// base64 character after it (writeFilePart).
const dataField = `"data":"A`

// writeFilePart writes file part p with its file's bytes when files reads
// them, else as it is.
func writeFilePart(w io.Writer, p agent.Content, files FileBytes) error {
	f, data, ok, err := files(p.FileID)
	if err != nil {
		return fmt.Errorf("export: file %s: %w", p.FileID, err)
	}
	if !ok {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	// The part's encoding with a data of one character, split there.
	b, err := json.Marshal(agent.Content{Type: agent.ContentFile, Mime: f.MediaType, Data: dataField[len(dataField)-1:], Name: f.Name})
	if err != nil {
		return err
	}
	at := bytes.Index(b, []byte(dataField))
	if at < 0 {
		return fmt.Errorf("export: a file part's encoding has no data: %s", b)
	}
	at += len(dataField) - 1
	if _, err := w.Write(b[:at]); err != nil {
		return err
	}
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := enc.Write(data); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write(b[at+1:])
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
