package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// File parts (DESIGN.md §12.1): a user message attaches a document as a
// Content part {"type":"file","file_id","name","mime"}. Every protocol
// maps its own shape (a chat completion's file part, a Responses
// input_file, an AI SDK file part, an A2A FilePart, the WebSocket's
// file part) onto one such part, either naming a file of the sender's
// (FileID) or carrying its bytes (Data, base64, with Name and Mime);
// attachFiles, the one function they all reach through the Runner,
// stores the bytes as a file of the sender's (deduplicated, capped) and
// leaves a reference. The stored message (the audit) keeps that
// reference, so history, replay and every client show the file; the
// working memory gets the part with Body set to what the model reads:
// the document's text when it fits the message's share of the context
// window (inlineBudget), else a note that it is searchable, and the
// turn's file_search then searches it (knowledge.go) as it searches the
// conversation's knowledge bases.

// ContentFile is the type of a Content part that attaches a file.
const ContentFile = "file"

// maxInlineFileBytes caps the document text one message inlines,
// whatever the window.
const maxInlineFileBytes = 256 << 10

// inlineBudget is how many bytes of document text a message may inline
// for conversation id's model: a quarter of its window.
func (r *Runner) inlineBudget(ctx context.Context, id string) int {
	model := ""
	if c, err := r.storeOf(id).Conversation(ctx, id); err == nil {
		model = c.Model
	}
	return r.inlineBudgetOf(ctx, model)
}

// inlineBudgetOf is the inline budget of a conversation on model.
func (r *Runner) inlineBudgetOf(ctx context.Context, model string) int {
	return min(r.window(ctx, model)*bytesPerToken/4, maxInlineFileBytes)
}

// hasFile reports whether content attaches a file.
func hasFile(content []Content) bool {
	return slices.ContainsFunc(content, func(c Content) bool { return c.Type == ContentFile })
}

// attachFiles stores the files content carries as files of the caller's
// and checks the ones it names: out is content with each file part a
// reference {file_id, name, mime}. undo deletes the files this call
// stored (not the ones it found: the same bytes uploaded before), for a
// send refused after it; on an error nothing is left stored.
func (r *Runner) attachFiles(ctx context.Context, content []Content) (out []Content, undo func(), err error) {
	undo = func() {}
	if !hasFile(content) {
		return content, undo, nil
	}
	fs := r.cfg.Files
	if fs == nil {
		return nil, undo, Errorf(CodeBadRequest, "this server keeps no files: send text or images")
	}
	var created []string
	undo = func() {
		for _, id := range created {
			if err := fs.Delete(context.WithoutCancel(ctx), id); err != nil && !errors.Is(err, ErrNotFound) {
				r.log.Warn("file_part_undo", "file_id", id, "err", err)
			}
		}
	}
	out = make([]Content, len(content))
	for i, c := range content {
		if c.Type != ContentFile {
			out[i] = c
			continue
		}
		var f File
		if c.Data == "" {
			if f, err = fs.File(ctx, c.FileID); err != nil {
				undo()
				return nil, func() {}, Errorf(ErrorCode(err), "content[%d]: %s", i, errMessage(err))
			}
		} else {
			data, derr := base64.StdEncoding.DecodeString(c.Data)
			if derr != nil {
				undo()
				return nil, func() {}, Errorf(CodeBadRequest, "content[%d].data must be standard base64 (the file's bytes)", i)
			}
			var dup bool
			if f, dup, err = fs.upload(ctx, FileInput{Name: c.Name, MediaType: c.Mime, Data: data}); err != nil {
				undo()
				return nil, func() {}, Errorf(ErrorCode(err), "content[%d]: %s", i, errMessage(err))
			}
			if !dup {
				created = append(created, f.ID)
			}
		}
		out[i] = Content{Type: ContentFile, FileID: f.ID, Name: f.Name, Mime: f.MediaType}
	}
	return out, undo, nil
}

// fileParts is what the model reads of the file parts of content
// (references, as attachFiles left them): each part's Body set to the
// document's text while the budget lasts, else to a note that it is
// searchable. strict (a send) fails on a file the caller may not read
// or whose text cannot be read, so nothing is stored; otherwise (memory
// rebuilt, a queued send starting) such a part says why instead.
func (r *Runner) fileParts(ctx context.Context, budget int, content []Content, strict bool) ([]Content, error) {
	out := slices.Clone(content)
	for i, c := range content {
		if c.Type != ContentFile {
			continue
		}
		text, err := r.fileText(ctx, c.FileID, strict)
		head := fmt.Sprintf("[file %q (%s, %s)", c.Name, c.FileID, c.Mime)
		switch {
		case err != nil && strict:
			return nil, Errorf(ErrorCode(err), "content[%d]: %s", i, errMessage(err))
		case err != nil:
			out[i].Body = head + " could not be read: " + errMessage(err) + "]"
		case len(text) <= budget:
			budget -= len(text)
			out[i].Body = head + "]\n" + text
		default:
			out[i].Body = fmt.Sprintf("%s: %d bytes of text, too long to include here; search it with the file_search tool]", head, len(text))
		}
	}
	return out, nil
}

// fileText is a file's text, as its extractor reads it: its passages in
// order, each page and heading said once where it starts. strict reads
// the file as the caller (not_found unless theirs); otherwise as its
// stored owner.
func (r *Runner) fileText(ctx context.Context, id string, strict bool) (string, error) {
	fs := r.cfg.Files
	if fs == nil {
		return "", Errorf(CodeNotFound, "file %q not found: this server keeps no files", Shorten(id, 80))
	}
	var f File
	var data []byte
	var err error
	if strict {
		f, data, err = fs.Content(ctx, id)
	} else if f, err = fs.cfg.Store.File(ctx, "", id); err == nil {
		data, err = fs.cfg.Store.FileContent(ctx, "", id)
	}
	if err != nil {
		return "", err
	}
	chunks, err := fs.cfg.Extractor.Extract(ctx, f.Name, f.MediaType, data)
	if err != nil {
		return "", Errorf(CodeBadRequest, "file %q cannot be read: %v", f.Name, err)
	}
	var b strings.Builder
	page, heading := 0, ""
	for _, ch := range chunks {
		if ch.Page != page && ch.Page > 0 {
			page = ch.Page
			fmt.Fprintf(&b, "(page %d)\n", page)
		}
		if ch.Heading != heading {
			heading = ch.Heading
			if heading != "" {
				fmt.Fprintf(&b, "# %s\n", heading)
			}
		}
		b.WriteString(ch.Text)
		b.WriteString("\n\n")
	}
	text := strings.TrimSpace(b.String())
	if text == "" {
		return "", Errorf(CodeBadRequest, "file %q holds no text to read", f.Name)
	}
	return text, nil
}

// memoryFiles are the files that the user messages of mem attach: the
// turn's file_search searches them besides its knowledge bases.
func memoryFiles(mem []ModelMessage) []string {
	var ids []string
	for _, m := range mem {
		if m.Role != RoleUser {
			continue
		}
		for _, c := range m.Content {
			if c.Type == ContentFile && c.FileID != "" && !slices.Contains(ids, c.FileID) {
				ids = append(ids, c.FileID)
			}
		}
	}
	return ids
}
