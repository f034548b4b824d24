package server

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/archive"
)

// eachMessage calls f with every message of a conversation in order (of
// every branch with all, else of the active path), read in pages bounded
// by Config.HistoryBytes: an export holds one page, not the conversation.
func (s *Server) eachMessage(ctx context.Context, id string, all bool, f func(agent.Message) error) error {
	q := agent.MessageQuery{ConversationID: id, Limit: agent.MaxPageSize, Bytes: s.cfg.HistoryBytes, All: all}
	for {
		p, err := s.convs.History(ctx, q)
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

// each is archive.Each over a conversation's messages (eachMessage).
func (s *Server) each(ctx context.Context, id string, all bool) archive.Each {
	return func(f func(agent.Message) error) error { return s.eachMessage(ctx, id, all, f) }
}

// exportFiles reads the export routes' files parameter: "" or "reference"
// (the default) writes each file part as its reference, which imports on
// this server, by the file's owner; "embed" writes the bytes of each file
// the caller may read (nil otherwise), so the export restores anywhere.
func (s *Server) exportFiles(r *http.Request) (archive.FileBytes, error) {
	switch v := r.URL.Query().Get("files"); v {
	case "", "reference":
		return nil, nil
	case "embed":
		return s.fileBytes(r.Context()), nil
	default:
		return nil, agent.Errorf(agent.CodeBadRequest, "files must be reference or embed, got %q", agent.Shorten(v, 40))
	}
}

// fileBytes reads files for an export that embeds them, through the read
// the download route makes (agent.Files.Content: the caller's own files,
// an admin's any): a file the caller may not read, or one deleted since,
// stays a reference; any other error ends the export.
func (s *Server) fileBytes(ctx context.Context) archive.FileBytes {
	return func(id string) (agent.File, []byte, bool, error) {
		if s.cfg.Files == nil { // a server that keeps no files has none to read
			return agent.File{}, nil, false, nil
		}
		f, data, err := s.cfg.Files.Content(ctx, id)
		if err != nil {
			switch agent.ErrorCode(err) {
			case agent.CodeNotFound, agent.CodeForbidden, agent.CodeUnauthorized:
				return agent.File{}, nil, false, nil
			}
			return agent.File{}, nil, false, err
		}
		return f, data, true, nil
	}
}

// handleExport writes one conversation as agentik JSON (an agent.Archive
// with one conversation, every branch's messages with their parent_id and
// the conversation's head; the default; its files' bytes with
// ?files=embed) or as Markdown (?format=markdown: the active path).
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "markdown" {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "format must be json or markdown, got %q", agent.Shorten(format, 40)))
		return
	}
	files, err := s.exportFiles(r)
	if err == nil && files != nil && format == "markdown" {
		err = agent.Errorf(agent.CodeBadRequest, "files=embed is for format=json (Markdown shows a file by its name)")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	c, err := s.convs.Get(ctx, r.PathValue("conversation_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Checked before the first byte: after it, a failure can only end the
	// body early.
	n, _, err := s.convs.PathInfo(ctx, c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	meta := map[string]string{"format": cmp.Or(format, "json")}
	if files != nil {
		meta["files"] = "embed"
	}
	s.audit().Record(ctx, agent.AuditExport, c.ID, meta) // audit.go
	name := "agentik-" + c.ID
	if format == "markdown" {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.md"`)
		_, _ = io.WriteString(w, archive.MarkdownHead(c, n))
		err := s.eachMessage(ctx, c.ID, false, func(m agent.Message) error { // people read the active path
			_, err := io.WriteString(w, archive.MarkdownMessage(m))
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
	_ = archive.WriteStart(w, s.cfg.Clock())
	if err := archive.WriteConversation(w, true, c, s.each(ctx, c.ID, true), s.feedbackOf(ctx, c), files); err != nil {
		s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
		return
	}
	_ = archive.WriteEnd(w, nil)
}

// handleExportAll streams every stored conversation, oldest update last
// (the list's order), as one agent.Archive document: a backup that
// POST /agentik/import reads back (its files' bytes too with
// ?files=embed). It is written as it is read, so its size is not bounded
// by memory; a failure midway ends the response early (the document is
// then not valid JSON, and the log says why).
func (s *Server) handleExportAll(w http.ResponseWriter, r *http.Request) {
	files, err := s.exportFiles(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var meta map[string]string
	if files != nil {
		meta = map[string]string{"files": "embed"}
	}
	s.audit().Record(ctx, agent.AuditExport, "all", meta) // audit.go
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="agentik-export.json"`)
	_ = archive.WriteStart(w, s.cfg.Clock())
	// Pages by offset: a conversation updated meanwhile may move between
	// pages; a backup is taken of a quiet database.
	n := 0
	for offset := 0; ; offset += agent.MaxPageSize {
		cs, _, err := s.convs.List(ctx, offset, agent.MaxPageSize)
		if err != nil {
			s.log.Error("export_failed", "err", err)
			return
		}
		for _, c := range cs {
			if c.Temp {
				continue
			}
			// The list's rows are slim: the whole conversation has its head.
			c, err := s.convs.Get(ctx, c.ID)
			if err != nil {
				if agent.ErrorCode(err) == agent.CodeNotFound {
					continue // deleted meanwhile
				}
				s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
				return
			}
			// Deleted midway, it ends the body early: the backup is
			// incomplete, and says so by not being valid JSON.
			if err := archive.WriteConversation(w, n == 0, c, s.each(ctx, c.ID, true), s.feedbackOf(ctx, c), files); err != nil {
				s.log.Error("export_failed", "conversation_id", c.ID, "err", err)
				return
			}
			n++
		}
		if len(cs) < agent.MaxPageSize {
			break
		}
	}
	// The exporter's own long-term memory (agent/memory.go).
	mem, err := s.cfg.Memory.Export(ctx)
	if err != nil {
		s.log.Error("export_failed", "err", err)
		return
	}
	_ = archive.WriteEnd(w, mem)
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
	if archive.IsZIP(body) {
		if body, err = archive.UnzipConversations(body, s.cfg.MaxImportBytes, " (AGENTIK_MAX_IMPORT_BYTES): import the ZIP with `agentik import FILE`, which sends it in parts, or raise the cap"); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	convs, mem, err := archive.Parse(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.cfg.Memory.CheckImport(r.Context(), mem); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.convs.Import(r.Context(), convs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Memory, err = s.cfg.Memory.Import(r.Context(), mem); err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if len(res.Conversations) == 0 && res.Memory == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}
