package openai

import (
	"encoding/base64"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// OpenAI's Files API (/v1/files) and Vector Stores API
// (/v1/vector_stores with files, file batches and search) over agentik's
// files and knowledge bases (agent/file.go, agent/knowledge.go): a file
// is a File (file-…), a vector store is a knowledge base (vs_…). The
// files service decides who sees what; another user's ids are
// not_found. A file batch is not stored: its id carries its file ids
// (vsfb_ and their base64), and its state is theirs.

// files is the files service, or unavailable.
func (h *Handler) files() (*agent.Files, error) {
	if h.cfg.Files == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no files")
	}
	return h.cfg.Files, nil
}

// withFiles runs f with the files service, answering its error.
func (h *Handler) withFiles(f func(w http.ResponseWriter, r *http.Request, fs *agent.Files) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fs, err := h.files()
		if err == nil {
			err = f(w, r, fs)
		}
		if err != nil {
			h.WriteError(w, r, err)
		}
	}
}

// fileObject is a File in OpenAI's shape.
func fileObject(f agent.File) map[string]any {
	status := "uploaded"
	switch f.Status {
	case agent.FileProcessed:
		status = "processed"
	case agent.FileFailed:
		status = "error"
	}
	o := map[string]any{"id": f.ID, "object": "file", "bytes": f.Bytes, "created_at": f.CreatedAt.Unix(), "filename": f.Name,
		"purpose": "assistants", "status": status, "expires_at": nil}
	if f.Error != "" {
		o["status_details"] = f.Error
	}
	return o
}

// list is OpenAI's list page.
func list(data []any) map[string]any {
	out := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		out["first_id"] = data[0].(map[string]any)["id"]
		out["last_id"] = data[len(data)-1].(map[string]any)["id"]
	}
	return out
}

func (h *Handler) handleCreateFile(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	in, err := readUpload(r)
	if err != nil {
		return err
	}
	f, err := fs.Upload(r.Context(), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileObject(f))
	return nil
}

// readUpload reads a multipart upload: the part "file" (and "purpose",
// which agentik takes for any value).
func readUpload(r *http.Request) (agent.FileInput, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return agent.FileInput{}, badParam("file", "upload the file as multipart/form-data with a part named \"file\"")
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return agent.FileInput{}, badParam("file", "the multipart body has no part named \"file\"")
		}
		if err != nil {
			return agent.FileInput{}, readError(err)
		}
		if p.FormName() != "file" {
			continue
		}
		return partFile(p)
	}
}

// partFile reads a multipart part as a file.
func partFile(p *multipart.Part) (agent.FileInput, error) {
	data, err := io.ReadAll(p)
	if err != nil {
		return agent.FileInput{}, readError(err)
	}
	return agent.FileInput{Name: p.FileName(), MediaType: p.Header.Get("Content-Type"), Data: data}, nil
}

// readError is the error of a body that could not be read: too_large
// past the cap, else bad_request.
func readError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return agent.Errorf(agent.CodeTooLarge, "the upload is larger than %d bytes (AGENTIK_MAX_FILE_BYTES)", tooBig.Limit)
	}
	return badParam("file", "the multipart body cannot be read: %v", err)
}

func (h *Handler) handleListFiles(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	all, err := fs.List(r.Context())
	if err != nil {
		return err
	}
	data := make([]any, len(all))
	for i, f := range all {
		data[i] = fileObject(f)
	}
	writeJSON(w, http.StatusOK, list(data))
	return nil
}

func (h *Handler) handleGetFile(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	f, err := fs.File(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileObject(f))
	return nil
}

func (h *Handler) handleDeleteFile(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	id := r.PathValue("id")
	if err := fs.Delete(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
	return nil
}

func (h *Handler) handleFileContent(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	f, data, err := fs.Content(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", f.MediaType)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("Content-Disposition", "attachment; filename="+strconv.Quote(f.Name))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	_, _ = w.Write(data)
	return nil
}

// storeStatus is a base's status in OpenAI's words.
func storeStatus(k agent.Knowledge) string {
	if k.Status == agent.KnowledgeProcessing {
		return "in_progress"
	}
	return "completed"
}

// fileCounts are a base's counts in OpenAI's shape.
func fileCounts(c agent.KnowledgeCounts) map[string]int {
	return map[string]int{"in_progress": c.Processing, "completed": c.Processed, "failed": c.Failed, "cancelled": 0, "total": c.Total}
}

// vectorStore is a base in OpenAI's shape.
func vectorStore(k agent.Knowledge) map[string]any {
	return map[string]any{"id": k.ID, "object": "vector_store", "created_at": k.CreatedAt.Unix(), "name": k.Name, "usage_bytes": 0,
		"file_counts": fileCounts(k.Counts), "status": storeStatus(k), "last_active_at": k.CreatedAt.Unix(), "metadata": map[string]string{},
		"expires_after": nil, "expires_at": nil, "description": k.Description}
}

// storeBody is the body of a vector store's create or update.
type storeBody struct {
	Name             *string           `json:"name"`
	Description      *string           `json:"description"`
	FileIDs          *[]string         `json:"file_ids"`
	Metadata         map[string]string `json:"metadata"`
	ExpiresAfter     any               `json:"expires_after"`
	ChunkingStrategy any               `json:"chunking_strategy"`
}

func (h *Handler) handleCreateStore(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	var b storeBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	k, err := fs.CreateKnowledge(r.Context(), agent.KnowledgeInput{Name: b.Name, Description: b.Description, FileIDs: b.FileIDs})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, vectorStore(k))
	return nil
}

func (h *Handler) handleListStores(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	ks, err := fs.Knowledges(r.Context())
	if err != nil {
		return err
	}
	data := make([]any, len(ks))
	for i, k := range ks {
		data[i] = vectorStore(k)
	}
	writeJSON(w, http.StatusOK, list(data))
	return nil
}

func (h *Handler) handleGetStore(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	k, err := fs.Knowledge(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, vectorStore(k))
	return nil
}

func (h *Handler) handleUpdateStore(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	var b storeBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	k, err := fs.UpdateKnowledge(r.Context(), r.PathValue("id"), agent.KnowledgeInput{Name: b.Name, Description: b.Description})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, vectorStore(k))
	return nil
}

func (h *Handler) handleDeleteStore(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	id := r.PathValue("id")
	if err := fs.DeleteKnowledge(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "vector_store.deleted", "deleted": true})
	return nil
}

// storeFile is a file of a base in OpenAI's shape.
func storeFile(storeID string, f agent.File) map[string]any {
	status := "in_progress"
	var lastErr any
	switch f.Status {
	case agent.FileProcessed:
		status = "completed"
	case agent.FileFailed:
		status, lastErr = "failed", map[string]string{"code": "invalid_file", "message": f.Error}
	}
	return map[string]any{"id": f.ID, "object": "vector_store.file", "usage_bytes": f.Bytes, "created_at": f.CreatedAt.Unix(),
		"vector_store_id": storeID, "status": status, "last_error": lastErr, "attributes": map[string]any{},
		"chunking_strategy": map[string]any{"type": "other"}}
}

func (h *Handler) handleAddStoreFile(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	var b struct {
		FileID string `json:"file_id"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	if b.FileID == "" {
		return badParam("file_id", "file_id is required")
	}
	id := r.PathValue("id")
	if _, err := fs.AddKnowledgeFile(r.Context(), id, b.FileID); err != nil {
		return err
	}
	f, err := fs.File(r.Context(), b.FileID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, storeFile(id, f))
	return nil
}

// storeFiles are the files of base id the caller may read.
func storeFiles(r *http.Request, fs *agent.Files, id string, only []string) (agent.Knowledge, []agent.File, error) {
	k, err := fs.Knowledge(r.Context(), id)
	if err != nil {
		return k, nil, err
	}
	ids := k.FileIDs
	if only != nil {
		ids = only
	}
	var out []agent.File
	for _, fid := range ids {
		f, err := fs.KnowledgeFile(r.Context(), k, fid)
		if err != nil {
			return k, nil, err
		}
		out = append(out, f)
	}
	return k, out, nil
}

func (h *Handler) handleListStoreFiles(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	id := r.PathValue("id")
	_, files, err := storeFiles(r, fs, id, nil)
	if err != nil {
		return err
	}
	data := make([]any, len(files))
	for i, f := range files {
		data[i] = storeFile(id, f)
	}
	writeJSON(w, http.StatusOK, list(data))
	return nil
}

func (h *Handler) handleGetStoreFile(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	id := r.PathValue("id")
	_, files, err := storeFiles(r, fs, id, []string{r.PathValue("file_id")})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, storeFile(id, files[0]))
	return nil
}

func (h *Handler) handleDeleteStoreFile(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	fid := r.PathValue("file_id")
	if _, err := fs.RemoveKnowledgeFile(r.Context(), r.PathValue("id"), fid); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": fid, "object": "vector_store.file.deleted", "deleted": true})
	return nil
}

// batchPrefix starts a file batch's id; the rest is its file ids,
// comma-separated, in unpadded base64url.
const batchPrefix = "vsfb_"

// maxBatchFiles caps one batch's files (its id carries them).
const maxBatchFiles = 100

func batchID(ids []string) string {
	return batchPrefix + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(ids, ",")))
}

func batchFiles(id string) ([]string, error) {
	raw, ok := strings.CutPrefix(id, batchPrefix)
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if !ok || err != nil || len(b) == 0 {
		return nil, agent.Errorf(agent.CodeNotFound, "file batch %q not found", agent.Shorten(id, 80))
	}
	return strings.Split(string(b), ","), nil
}

// batchPollAfter is the openai-poll-after-ms an in-progress batch
// answers: the SDKs' pollers wait that long (5 s without it).
const batchPollAfter = "200"

// writeBatch answers a batch, with the poll hint while it is in progress.
func writeBatch(w http.ResponseWriter, b map[string]any) {
	if b["status"] == "in_progress" {
		w.Header().Set("openai-poll-after-ms", batchPollAfter)
	}
	writeJSON(w, http.StatusOK, b)
}

// batchObject is a batch of files of base k in OpenAI's shape.
func batchObject(k agent.Knowledge, id string, files []agent.File) map[string]any {
	var c agent.KnowledgeCounts
	for _, f := range files {
		c.Total++
		switch f.Status {
		case agent.FileProcessing:
			c.Processing++
		case agent.FileProcessed:
			c.Processed++
		case agent.FileFailed:
			c.Failed++
		}
	}
	status := "completed"
	if c.Processing > 0 {
		status = "in_progress"
	}
	created := k.CreatedAt.Unix()
	if len(files) > 0 {
		created = files[0].CreatedAt.Unix()
	}
	return map[string]any{"id": id, "object": "vector_store.files_batch", "created_at": created, "vector_store_id": k.ID,
		"status": status, "file_counts": fileCounts(c)}
}

func (h *Handler) handleCreateBatch(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	var b struct {
		FileIDs []string `json:"file_ids"`
		Files   []struct {
			FileID string `json:"file_id"`
		} `json:"files"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	for _, f := range b.Files {
		b.FileIDs = append(b.FileIDs, f.FileID)
	}
	if len(b.FileIDs) == 0 || len(b.FileIDs) > maxBatchFiles {
		return badParam("file_ids", "file_ids must name 1 to %d files", maxBatchFiles)
	}
	id := r.PathValue("id")
	for _, fid := range b.FileIDs {
		if _, err := fs.AddKnowledgeFile(r.Context(), id, fid); err != nil {
			return err
		}
	}
	k, files, err := storeFiles(r, fs, id, b.FileIDs)
	if err != nil {
		return err
	}
	writeBatch(w, batchObject(k, batchID(b.FileIDs), files))
	return nil
}

func (h *Handler) handleGetBatch(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	bid := r.PathValue("batch_id")
	ids, err := batchFiles(bid)
	if err != nil {
		return err
	}
	k, files, err := storeFiles(r, fs, r.PathValue("id"), ids)
	if err != nil {
		return err
	}
	writeBatch(w, batchObject(k, bid, files))
	return nil
}

func (h *Handler) handleListBatchFiles(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	ids, err := batchFiles(r.PathValue("batch_id"))
	if err != nil {
		return err
	}
	k, files, err := storeFiles(r, fs, r.PathValue("id"), ids)
	if err != nil {
		return err
	}
	data := make([]any, len(files))
	for i, f := range files {
		data[i] = storeFile(k.ID, f)
	}
	writeJSON(w, http.StatusOK, list(data))
	return nil
}

func (h *Handler) handleSearchStore(w http.ResponseWriter, r *http.Request, fs *agent.Files) error {
	var b struct {
		Query          any  `json:"query"`
		MaxNumResults  *int `json:"max_num_results"`
		Filters        any  `json:"filters"`
		RankingOptions any  `json:"ranking_options"`
		RewriteQuery   bool `json:"rewrite_query"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	var queries []string
	switch q := b.Query.(type) {
	case string:
		queries = []string{q}
	case []any:
		for _, x := range q {
			if s, ok := x.(string); ok {
				queries = append(queries, s)
			}
		}
	}
	if len(queries) == 0 || strings.TrimSpace(strings.Join(queries, "")) == "" {
		return badParam("query", "query must be a string or a list of strings")
	}
	limit := 10
	if b.MaxNumResults != nil {
		if *b.MaxNumResults < 1 || *b.MaxNumResults > 50 {
			return badParam("max_num_results", "max_num_results must be 1 to 50")
		}
		limit = *b.MaxNumResults
	}
	ps, err := fs.Search(r.Context(), []string{r.PathValue("id")}, agent.SearchInput{Query: strings.Join(queries, " "), Limit: limit})
	if err != nil {
		return err
	}
	data := make([]any, len(ps))
	for i, p := range ps {
		attrs := map[string]any{}
		if p.Page > 0 {
			attrs["page"] = p.Page
		}
		if p.Heading != "" {
			attrs["heading"] = p.Heading
		}
		data[i] = map[string]any{"file_id": p.FileID, "filename": p.FileName, "score": p.Score, "attributes": attrs,
			"content": []any{map[string]string{"type": "text", "text": p.Text}}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "vector_store.search_results.page", "search_query": queries, "data": data,
		"has_more": false, "next_page": nil})
	return nil
}
