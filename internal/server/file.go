package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The ops of files and knowledge bases (docs/PROTOCOL.md, Files and
// knowledge), each the REST route under /agentik/files or
// /agentik/knowledge and the WebSocket op of its name (op.go). The files
// service decides who sees what (agent/file.go, agent/knowledge.go).

// files is the server's files service, or unavailable.
func (s *Server) files() (*agent.Files, error) {
	if s.cfg.Files == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no files")
	}
	return s.cfg.Files, nil
}

// fileOp declares a files op: run gets the files service.
func fileOp[T any](name string, status int, run func(ctx context.Context, fs *agent.Files, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		fs, err := s.files()
		if err != nil {
			return nil, err
		}
		return run(ctx, fs, in)
	})
}

// fileUpload is an upload: a JSON object with base64 data, or (REST) a
// multipart/form-data body whose part "file" is the file.
type fileUpload struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"` // base64
	raw       []byte
}

// decode implements decoder: multipart when the body starts with its
// boundary line, else JSON.
func (u *fileUpload) decode(b []byte) error {
	if bytes.HasPrefix(b, []byte("--")) {
		return u.multipart(b)
	}
	if err := json.Unmarshal(b, u); err != nil {
		return inputError(protocol.OpUploadFile, b, err)
	}
	data, err := base64.StdEncoding.DecodeString(u.Data)
	if err != nil {
		return agent.Errorf(agent.CodeBadRequest, "data must be the file's bytes in standard base64: %v", err)
	}
	u.raw, u.Data = data, ""
	return nil
}

// multipart reads the part "file" of a multipart/form-data body, its
// boundary taken from the body's first line.
func (u *fileUpload) multipart(b []byte) error {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	boundary := strings.TrimSpace(string(line[2:]))
	mr := multipart.NewReader(bytes.NewReader(b), boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return agent.Errorf(agent.CodeBadRequest, "the multipart body has no part named \"file\"")
		}
		if err != nil {
			return agent.Errorf(agent.CodeBadRequest, "the multipart body cannot be read: %v", err)
		}
		if p.FormName() != "file" {
			continue
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return agent.Errorf(agent.CodeBadRequest, "the multipart body cannot be read: %v", err)
		}
		u.Name, u.MediaType, u.raw = p.FileName(), p.Header.Get("Content-Type"), data
		return nil
	}
}

// fileRef names a file: the route's {file_id}.
type fileRef struct {
	ID string `json:"file_id"`
}

func (r *fileRef) check() error { return need("file_id", r.ID) }

// knowledgeRef names a base: the route's {knowledge_id}.
type knowledgeRef struct {
	ID string `json:"knowledge_id"`
}

func (r *knowledgeRef) check() error { return need("knowledge_id", r.ID) }

// knowledgeChange is an update_knowledge.
type knowledgeChange struct {
	knowledgeRef
	agent.KnowledgeInput
}

// knowledgeFile names a file of a base.
type knowledgeFile struct {
	knowledgeRef
	FileID string `json:"file_id"`
}

func (r *knowledgeFile) check() error {
	if err := r.knowledgeRef.check(); err != nil {
		return err
	}
	return need("file_id", r.FileID)
}

// knowledgeSearch is a search_knowledge.
type knowledgeSearch struct {
	knowledgeRef
	Query string      `json:"query"`
	Limit json.Number `json:"limit"`
}

var (
	opUploadFile = fileOp(protocol.OpUploadFile, http.StatusCreated, func(ctx context.Context, fs *agent.Files, in fileUpload) (any, error) {
		return fs.Upload(ctx, agent.FileInput{Name: in.Name, MediaType: in.MediaType, Data: in.raw})
	})
	opListFiles = fileOp(protocol.OpListFiles, 0, func(ctx context.Context, fs *agent.Files, _ struct{}) (any, error) {
		list, err := fs.List(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.FilesResult{Files: list}, nil
	})
	opGetFile = fileOp(protocol.OpGetFile, 0, func(ctx context.Context, fs *agent.Files, in fileRef) (any, error) {
		return fs.File(ctx, in.ID)
	})
	opDeleteFile = fileOp(protocol.OpDeleteFile, http.StatusNoContent, func(ctx context.Context, fs *agent.Files, in fileRef) (any, error) {
		return nil, fs.Delete(ctx, in.ID)
	})
	opRetryFile = fileOp(protocol.OpRetryFile, 0, func(ctx context.Context, fs *agent.Files, in fileRef) (any, error) {
		return fs.Retry(ctx, in.ID)
	})
	opCreateKnowledge = fileOp(protocol.OpCreateKnowledge, http.StatusCreated, func(ctx context.Context, fs *agent.Files, in agent.KnowledgeInput) (any, error) {
		return fs.CreateKnowledge(ctx, in)
	})
	opListKnowledge = fileOp(protocol.OpListKnowledge, 0, func(ctx context.Context, fs *agent.Files, _ struct{}) (any, error) {
		list, err := fs.Knowledges(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.KnowledgeListResult{Knowledge: list, KeywordOnly: fs.KeywordOnly()}, nil
	})
	opGetKnowledge = fileOp(protocol.OpGetKnowledge, 0, func(ctx context.Context, fs *agent.Files, in knowledgeRef) (any, error) {
		return fs.Knowledge(ctx, in.ID)
	})
	opUpdateKnowledge = fileOp(protocol.OpUpdateKnowledge, 0, func(ctx context.Context, fs *agent.Files, in knowledgeChange) (any, error) {
		return fs.UpdateKnowledge(ctx, in.ID, in.KnowledgeInput)
	})
	opDeleteKnowledge = fileOp(protocol.OpDeleteKnowledge, http.StatusNoContent, func(ctx context.Context, fs *agent.Files, in knowledgeRef) (any, error) {
		return nil, fs.DeleteKnowledge(ctx, in.ID)
	})
	opAddKnowledgeFile = fileOp(protocol.OpAddKnowledgeFile, 0, func(ctx context.Context, fs *agent.Files, in knowledgeFile) (any, error) {
		return fs.AddKnowledgeFile(ctx, in.ID, in.FileID)
	})
	opRemoveKnowledgeFile = fileOp(protocol.OpRemoveKnowledgeFile, 0, func(ctx context.Context, fs *agent.Files, in knowledgeFile) (any, error) {
		return fs.RemoveKnowledgeFile(ctx, in.ID, in.FileID)
	})
	opSearchKnowledge = fileOp(protocol.OpSearchKnowledge, 0, func(ctx context.Context, fs *agent.Files, in knowledgeSearch) (any, error) {
		limit, err := limitOf(in.Limit)
		if err != nil {
			return nil, err
		}
		ps, err := fs.Search(ctx, []string{in.ID}, agent.SearchInput{Query: in.Query, Limit: limit})
		if err != nil {
			return nil, err
		}
		return protocol.SearchKnowledgeResult{Results: ps}, nil
	})
)

// handleFileContent answers a file's bytes (GET /agentik/files/{file_id}/content).
func (s *Server) handleFileContent(w http.ResponseWriter, r *http.Request) {
	fs, err := s.files()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, data, err := fs.Content(r.Context(), r.PathValue("file_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	WriteFile(w, f, data)
}

// WriteFile answers a file's bytes as a download: never rendered by the
// browser as a page of this origin.
func WriteFile(w http.ResponseWriter, f agent.File, data []byte) {
	h := w.Header()
	h.Set("Content-Type", f.MediaType)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Content-Disposition", "attachment; filename="+strconv.Quote(f.Name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	_, _ = w.Write(data)
}

// uploadLimit is the body cap of an upload: the file cap in base64 and
// room for the rest of the request.
func (s *Server) uploadLimit() int64 {
	if s.cfg.Files == nil {
		return protocol.MaxBodyBytes
	}
	return max(protocol.MaxBodyBytes, s.cfg.Files.MaxFileBytes()/3*4+1<<20)
}

// filesPath and openaiFilesPath are the upload routes, whose bodies have
// the cap of a file (uploadLimit).
const (
	filesPath       = "/agentik/files"
	openaiFilesPath = "/v1/files"
)

// handleKnowledgePage is the knowledge page: the bases the principal may
// read, each with its files.
func (s *Server) handleKnowledgePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := s.page(ctx, "")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	p.Title, p.Nav = "Knowledge · agentik", "knowledge"
	v := &web.KnowledgeView{Off: s.cfg.Files == nil}
	if !v.Off {
		fs := s.cfg.Files
		v.KeywordOnly = fs.KeywordOnly()
		ks, err := fs.Knowledges(ctx)
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		scope := agent.Scope(ctx)
		for _, k := range ks {
			b := web.KnowledgeBase{Knowledge: k, Mine: scope == "" || scope == k.Owner}
			for _, id := range k.FileIDs {
				f, err := fs.KnowledgeFile(ctx, k, id)
				if agent.ErrorCode(err) == agent.CodeNotFound {
					continue // deleted meanwhile
				}
				if err != nil {
					s.pageError(w, r, err)
					return
				}
				b.Files = append(b.Files, f)
			}
			v.Bases = append(v.Bases, b)
		}
	}
	p.Knowledge = v
	s.renderPage(w, r, http.StatusOK, p)
}
