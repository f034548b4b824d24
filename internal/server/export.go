package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// eachMessage calls f with every message of a conversation in order (of
// every branch with all, else of the active path), read in pages bounded
// by Config.HistoryBytes: an export holds one page, not the conversation.
func (s *Server) eachMessage(ctx context.Context, id string, all bool, f func(agent.Message) error) error {
	q := agent.MessageQuery{ConversationID: id, Limit: agent.MaxPageSize, Bytes: s.cfg.HistoryBytes, All: all}
	for {
		p, err := s.runner.History(ctx, q)
		if err != nil {
			return err
		}
		for _, m := range p.Messages {
			if err := f(m); err != nil {
				return err
			}
		}
		if p.NextOffset == 0 {
			return nil
		}
		// On from the last seq (a stored conversation), so a message
		// written meanwhile moves nothing; by offset in a temp one.
		if last := p.Messages[len(p.Messages)-1]; last.Seq > 0 {
			q.After, q.Offset = last.Seq, 0
		} else {
			q.Offset = p.NextOffset
		}
	}
}

// writeArchived writes one agent.ArchivedConversation, its messages
// streamed as they are read: the bytes json.Marshal would give.
func (s *Server) writeArchived(ctx context.Context, w io.Writer, c agent.Conversation) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, `{"conversation":`); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `,"messages":[`); err != nil {
		return err
	}
	n := 0
	err = s.eachMessage(ctx, c.ID, true, func(m agent.Message) error {
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
	_, err = io.WriteString(w, "]}")
	return err
}

// handleExport writes one conversation as agentik JSON (an agent.Archive
// with one conversation, every branch's messages with their parent_id and
// the conversation's head; the default) or as Markdown (?format=markdown:
// the active path).
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "markdown" {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "format must be json or markdown, got %q", agent.Shorten(format, 40)))
		return
	}
	ctx := r.Context()
	c, err := s.runner.Conversation(ctx, r.PathValue("conversation_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Checked before the first byte: after it, a failure can only end the
	// body early.
	n, _, err := s.runner.PathInfo(ctx, c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := "agentik-" + c.ID
	if format == "markdown" {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.md"`)
		_, _ = io.WriteString(w, markdownHead(c, n))
		err := s.eachMessage(ctx, c.ID, false, func(m agent.Message) error { // people read the active path
			_, err := io.WriteString(w, markdownMessage(m))
			return err
		})
		if err != nil {
			s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
		}
		return
	}
	// Streamed: the bytes of json.NewEncoder(w).Encode(agent.Archive{…}).
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.json"`)
	at, _ := json.Marshal(time.Now().UTC())
	_, _ = fmt.Fprintf(w, `{"format":%q,"version":%d,"exported_at":%s,"conversations":[`, agent.ArchiveFormat, agent.ArchiveVersion, at)
	if err := s.writeArchived(ctx, w, c); err != nil {
		s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
		return
	}
	_, _ = io.WriteString(w, "]}\n")
}

// handleExportAll streams every stored conversation, oldest update last
// (the list's order), as one agent.Archive document: a backup that
// POST /agentik/import reads back. It is written as it is read, so its
// size is not bounded by memory; a failure midway ends the response early
// (the document is then not valid JSON, and the log says why).
func (s *Server) handleExportAll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="agentik-export.json"`)
	head, _ := json.Marshal(struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		ExportedAt string `json:"exported_at"`
	}{agent.ArchiveFormat, agent.ArchiveVersion, agent.FormatTime(time.Now())})
	_, _ = w.Write(head[:len(head)-1])
	_, _ = io.WriteString(w, `,"conversations":[`)
	// Pages by offset: a conversation updated meanwhile may move between
	// pages; a backup is taken of a quiet database.
	n := 0
	for offset := 0; ; offset += agent.MaxPageSize {
		cs, _, err := s.runner.Conversations(ctx, offset, agent.MaxPageSize)
		if err != nil {
			s.log.Error("export_failed", "err", err)
			return
		}
		for _, c := range cs {
			if c.Temp {
				continue
			}
			// The list's rows are slim: the whole conversation has its head.
			c, err := s.runner.Conversation(ctx, c.ID)
			if err != nil {
				if agent.ErrorCode(err) == agent.CodeNotFound {
					continue // deleted meanwhile
				}
				s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
				return
			}
			if n > 0 {
				_, _ = io.WriteString(w, ",")
			}
			n++
			// Deleted midway, it ends the body early: the backup is
			// incomplete, and says so by not being valid JSON.
			if err := s.writeArchived(ctx, w, c); err != nil {
				s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
				return
			}
		}
		if len(cs) < agent.MaxPageSize {
			break
		}
	}
	_, _ = io.WriteString(w, "]")
	// The exporter's own long-term memory (agent/memory.go).
	mem, err := s.runner.ExportMemory(ctx)
	if err != nil {
		s.log.Error("export_failed", "err", err)
		return
	}
	if len(mem) > 0 {
		b, err := json.Marshal(mem)
		if err != nil {
			s.log.Error("export_failed", "err", err)
			return
		}
		_, _ = io.WriteString(w, `,"memory":`)
		_, _ = w.Write(b)
	}
	_, _ = io.WriteString(w, "}\n")
}

// markdownHead is the start of a conversation in Markdown (n messages).
func markdownHead(c agent.Conversation, n int) string {
	title := c.Title
	if title == "" {
		title = "Untitled conversation"
	}
	return fmt.Sprintf("# %s\n\n_Created %s · %d messages · exported from agentik_\n", oneLine(title), agent.FormatTime(c.CreatedAt), n)
}

// markdownMessage renders one message for people, under a heading naming
// who wrote it and when. Tool calls and results are fenced code blocks;
// images are noted, not embedded.
func markdownMessage(m agent.Message) string {
	var b strings.Builder
	fence := func(s string) string {
		f := "```"
		for strings.Contains(s, f) {
			f += "`"
		}
		return f
	}
	when := agent.FormatTime(m.Date)
	switch m.Type {
	case agent.MessageUser, agent.MessageAssistant:
		who := "User"
		if m.Type == agent.MessageAssistant {
			who = "Assistant"
		}
		fmt.Fprintf(&b, "\n## %s · %s\n\n", who, when)
		for _, part := range m.Content {
			switch part.Type {
			case agent.ContentText:
				b.WriteString(part.Body)
				b.WriteString("\n")
			case agent.ContentImage:
				fmt.Fprintf(&b, "_[image: %s]_\n", part.Mime)
			}
		}
		if m.Interrupted {
			b.WriteString("\n_(interrupted)_\n")
		}
	case agent.MessageToolCall:
		f := fence(m.Arguments)
		fmt.Fprintf(&b, "\n## Tool call · %s · %s\n\n%sjson\n%s\n%s\n", oneLine(m.Name), when, f, m.Arguments, f)
	case agent.MessageToolResult:
		f := fence(m.Result)
		label := "Tool result"
		if m.IsError {
			label = "Tool error"
		}
		fmt.Fprintf(&b, "\n## %s · %s · %s\n\n%s\n%s\n%s\n", label, oneLine(m.Name), when, f, m.Result, f)
	case agent.MessageError:
		fmt.Fprintf(&b, "\n## Error · %s\n\n> %s (%s)\n", when, oneLine(m.Error), m.Code)
	}
	return b.String()
}

// Markdown renders a conversation for people: its title, then each message
// (markdownMessage). The export route streams the same, page by page.
func Markdown(c agent.Conversation, ms []agent.Message) string {
	var b strings.Builder
	b.WriteString(markdownHead(c, len(ms)))
	for _, m := range ms {
		b.WriteString(markdownMessage(m))
	}
	return b.String()
}

// oneLine keeps s on one Markdown line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// importPath is the import route (routes.go), whose body has a cap of its own
// (bodyLimit).
const importPath = "/agentik/import"

// handleImport creates conversations from agentik JSON (an agent.Archive)
// or from the conversations.json of a ChatGPT data export (a JSON array),
// sent as it is or inside the export's ZIP (its conversations.json, capped
// uncompressed as the body is), in one transaction: all or nothing.
func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
			err = agent.Errorf(agent.CodeTooLarge, "the import is larger than %d bytes (AGENTIK_MAX_IMPORT_BYTES)", tooBig.Limit)
		}
		s.writeError(w, r, err)
		return
	}
	if protocol.IsZIP(body) {
		if body, err = protocol.UnzipConversations(body, s.cfg.MaxImportBytes, " (AGENTIK_MAX_IMPORT_BYTES): import the ZIP with `agentik import FILE`, which sends it in parts, or raise the cap"); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	convs, mem, err := parseImport(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.runner.CheckMemoryImport(r.Context(), mem); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.runner.Import(r.Context(), convs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Memory, err = s.runner.ImportMemory(r.Context(), mem); err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if len(res.Conversations) == 0 && res.Memory == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}

// parseImport reads an import body: agentik JSON (conversations and
// memory) or ChatGPT's conversations.json, told apart by the first byte
// ({ or [).
func parseImport(body []byte) ([]agent.ImportConversation, []agent.ArchivedMemory, error) {
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
			Settings: archivedSettings(c.Conversation),
		}
	}
	return out, a.Memory, nil
}

// archivedSettings are the settings an exported conversation carries.
func archivedSettings(c agent.Conversation) agent.Settings {
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
