package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Files (DESIGN.md §12.1): a user's uploaded documents, kept in the
// database with their bytes, deduplicated by sha256 per owner, and
// ingested in the background into chunks (text with the page and heading
// they came from, and an embedding when a model makes them) that
// knowledge bases (knowledge.go) search. Ingestion is durable: a file is
// processing until one transaction stores all its chunks with its new
// status, so a kill -9 mid-ingest leaves it processing with no chunk, and
// the next start ingests it again (Files.Run).

// File statuses.
const (
	FileProcessing = "processing"
	FileProcessed  = "processed"
	FileFailed     = "failed"
)

// Default caps of files.
const (
	// DefaultMaxFileBytes caps one file (AGENTIK_MAX_FILE_BYTES).
	DefaultMaxFileBytes = 32 << 20
	// DefaultMaxUserFileBytes caps the files of one user together
	// (AGENTIK_MAX_USER_FILE_BYTES).
	DefaultMaxUserFileBytes = 1 << 30
	// maxFileName caps a file's name, in bytes.
	maxFileName = 255
	// embedBatch is how many chunks one embeddings request carries.
	embedBatch = 64
)

// File is an uploaded document.
type File struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type"`
	Bytes     int64     `json:"bytes"`
	SHA256    string    `json:"sha256"`
	Status    string    `json:"status"`
	Error     string    `json:"error,omitempty"` // why it failed
	Chunks    int       `json:"chunks"`          // how many passages it was cut into
	CreatedAt time.Time `json:"created_at"`
	Owner     string    `json:"-"`
}

// Chunk is one passage of a file: its text and where it came from.
type Chunk struct {
	Page    int    // 1-based page of a PDF; 0 when the format has none
	Heading string // the heading it is under; "" when none
	Text    string
	Vector  []float32 // its embedding; nil without an embedding model
}

// Extracted is a file's text as an Extractor cut it.
type Extracted struct {
	Chunks []Chunk
}

// Extractor turns a file's bytes into chunks (package knowledge). An
// error is the reason the file failed ("no text layer", "encrypted PDF").
type Extractor interface {
	// Detect names the media type of a file from its name, the type its
	// uploader declared and its bytes; bad_request when the type is
	// unknown or the bytes are not what the name or type says.
	Detect(name, declared string, data []byte) (string, error)
	// Extract cuts data, of media type mediaType, into chunks.
	Extract(ctx context.Context, name, mediaType string, data []byte) ([]Chunk, error)
}

// Embedder makes embeddings of texts (the provider's /v1/embeddings).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// FileStore keeps files, their chunks and knowledge bases (the database).
// An owner argument of "" means any owner (an admin's read).
type FileStore interface {
	// PutFile stores f with its bytes, unless owner already has a file of
	// the same sha256, which it returns instead (dup true). It refuses
	// with too_large a file that would take the owner's files past
	// maxTotal bytes.
	PutFile(ctx context.Context, f File, data []byte, maxTotal int64) (stored File, dup bool, err error)
	// File returns one file, or not_found.
	File(ctx context.Context, owner, id string) (File, error)
	// FileContent returns a file's bytes, or not_found.
	FileContent(ctx context.Context, owner, id string) ([]byte, error)
	// Files lists owner's files, newest first.
	Files(ctx context.Context, owner string) ([]File, error)
	// DeleteFile deletes a file, its chunks and its place in knowledge bases.
	DeleteFile(ctx context.Context, owner, id string) error
	// PendingFiles lists the files still processing (ingestion resumes them).
	PendingFiles(ctx context.Context) ([]File, error)
	// FinishFile stores a file's chunks and its status in one
	// transaction, replacing any chunks it had; not_found when the file
	// was deleted meanwhile.
	FinishFile(ctx context.Context, id string, chunks []Chunk, status, reason string) error
	// RetryFile sets a failed file back to processing; conflict unless it failed.
	RetryFile(ctx context.Context, owner, id string) (File, error)
	// FileChunks returns a file's stored chunks in order, without vectors.
	FileChunks(ctx context.Context, id string) ([]Chunk, error)
	KnowledgeStore
}

// fileOwner is whose files ctx's principal reads: "" for an admin
// (everyone's), else their own; unauthorized without a user.
func fileOwner(ctx context.Context) (string, error) {
	p := PrincipalFrom(ctx)
	if p.UserID == "" {
		return "", Errorf(CodeUnauthorized, "sign in to use files")
	}
	return Scope(ctx), nil
}

// FilesConfig holds what the files service needs.
type FilesConfig struct {
	Store     FileStore
	Extractor Extractor
	// Embedder makes embeddings; nil: retrieval is keyword-only.
	Embedder Embedder
	// Publisher carries file_status events to the owner's streams; nil: none.
	Publisher Publisher
	// MaxFileBytes caps a file (DefaultMaxFileBytes when 0);
	// MaxUserBytes caps a user's files together (DefaultMaxUserFileBytes).
	MaxFileBytes int64
	MaxUserBytes int64
	// Groups answers which groups a user is in, for the bases shared with
	// groups (nil: nobody is in one); Projects is the project index, whose
	// members read their projects' bases (nil: no projects).
	Groups   GroupStore
	Projects *ProjectIndex
	// Claim, if set, makes this instance the one that ingests file id
	// until release (instances sharing a database); ok false: another
	// ingests it now (if that one dies, a later sweep finds the file
	// still processing). nil: this process is the only one.
	Claim  func(ctx context.Context, id string) (release func(), ok bool, err error)
	Logger *slog.Logger
	Now    Clock
}

// Files is the service of files and knowledge bases.
type Files struct {
	cfg  FilesConfig
	log  *slog.Logger
	now  Clock
	work chan string // ids of files to ingest

	mu      sync.Mutex
	queued  map[string]bool
	running bool
	changed chan struct{} // closed (and replaced) when a file's status changes
	// extracting holds the extraction of each file still processing, so
	// that a send inlining a file and its ingestion extract it once
	// (extractOnce); ingest forgets it when it ends.
	extracting map[string]*extraction
}

// extraction is one file's extraction, done once for whoever asks.
type extraction struct {
	done   chan struct{} // closed when chunks and err are set
	chunks []Chunk       // shared: never changed
	err    error
}

// NewFiles makes the files service; it fails without a store or an
// extractor.
func NewFiles(cfg FilesConfig) (*Files, error) {
	if cfg.Store == nil || cfg.Extractor == nil {
		return nil, errors.New("files: a FileStore and an Extractor are required")
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxUserBytes <= 0 {
		cfg.MaxUserBytes = DefaultMaxUserFileBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Files{cfg: cfg, log: cfg.Logger, now: cfg.Now, work: make(chan string, 1024), queued: map[string]bool{}, changed: make(chan struct{}),
		extracting: map[string]*extraction{}}, nil
}

// MaxFileBytes is the cap of one file.
func (fs *Files) MaxFileBytes() int64 { return fs.cfg.MaxFileBytes }

// KeywordOnly reports that retrieval has no embedding model.
func (fs *Files) KeywordOnly() bool { return fs.cfg.Embedder == nil }

// FileInput is an upload.
type FileInput struct {
	Name      string
	MediaType string // as declared; "" to detect
	Data      []byte
}

// cleanName is a file's name as stored: its base name, trimmed.
func cleanName(name string) (string, error) {
	name = strings.TrimSpace(path.Base(strings.ReplaceAll(name, "\\", "/")))
	if name == "" || name == "." || name == "/" {
		return "", Errorf(CodeBadRequest, "the file needs a name, e.g. \"handbook.pdf\"")
	}
	if !utf8.ValidString(name) || strings.ContainsAny(name, "\x00\r\n") {
		return "", Errorf(CodeBadRequest, "the file's name must be valid UTF-8 on one line")
	}
	if len(name) > maxFileName {
		return "", Errorf(CodeBadRequest, "the file's name is %d bytes long; at most %d", len(name), maxFileName)
	}
	return name, nil
}

// Upload stores a file of the caller's and queues its ingestion. The same
// bytes uploaded again by the same user answer the stored file.
func (fs *Files) Upload(ctx context.Context, in FileInput) (File, error) {
	f, _, err := fs.upload(ctx, in)
	return f, err
}

// upload is Upload that also says whether the file was stored before
// (dup: the same bytes of the same user).
func (fs *Files) upload(ctx context.Context, in FileInput) (File, bool, error) {
	p := PrincipalFrom(ctx)
	if p.UserID == "" {
		return File{}, false, Errorf(CodeUnauthorized, "sign in to upload files")
	}
	name, err := cleanName(in.Name)
	if err != nil {
		return File{}, false, err
	}
	if len(in.Data) == 0 {
		return File{}, false, Errorf(CodeBadRequest, "the file %q is empty", name)
	}
	if int64(len(in.Data)) > fs.cfg.MaxFileBytes {
		return File{}, false, Errorf(CodeTooLarge, "the file is %d bytes; AGENTIK_MAX_FILE_BYTES allows at most %d", len(in.Data), fs.cfg.MaxFileBytes)
	}
	mt, err := fs.cfg.Extractor.Detect(name, in.MediaType, in.Data)
	if err != nil {
		return File{}, false, err
	}
	sum := sha256.Sum256(in.Data)
	f := File{ID: "file-" + NewID(), Name: name, MediaType: mt, Bytes: int64(len(in.Data)), SHA256: hex.EncodeToString(sum[:]),
		Status: FileProcessing, CreatedAt: fs.now().UTC(), Owner: p.UserID}
	stored, dup, err := fs.cfg.Store.PutFile(ctx, f, in.Data, fs.cfg.MaxUserBytes)
	if err != nil {
		return File{}, false, err
	}
	if !dup {
		fs.status(stored)
		fs.enqueue(stored.ID)
	}
	return stored, dup, nil
}

// File returns one of the caller's files (an admin's: anyone's).
func (fs *Files) File(ctx context.Context, id string) (File, error) {
	owner, err := fileOwner(ctx)
	if err != nil {
		return File{}, err
	}
	return fs.cfg.Store.File(ctx, owner, id)
}

// Content returns a file with its bytes.
func (fs *Files) Content(ctx context.Context, id string) (File, []byte, error) {
	f, err := fs.File(ctx, id)
	if err != nil {
		return File{}, nil, err
	}
	data, err := fs.cfg.Store.FileContent(ctx, f.Owner, id)
	return f, data, err
}

// List lists the caller's files, newest first (an admin's: their own).
func (fs *Files) List(ctx context.Context) ([]File, error) {
	p := PrincipalFrom(ctx)
	if p.UserID == "" {
		return nil, Errorf(CodeUnauthorized, "sign in to use files")
	}
	out, err := fs.cfg.Store.Files(ctx, p.UserID)
	if out == nil {
		out = []File{}
	}
	return out, err
}

// Delete deletes one of the caller's files with its chunks.
func (fs *Files) Delete(ctx context.Context, id string) error {
	f, err := fs.File(ctx, id)
	if err != nil {
		return err
	}
	return fs.cfg.Store.DeleteFile(ctx, f.Owner, id)
}

// Retry ingests a failed file again.
func (fs *Files) Retry(ctx context.Context, id string) (File, error) {
	f, err := fs.File(ctx, id)
	if err != nil {
		return File{}, err
	}
	f, err = fs.cfg.Store.RetryFile(ctx, f.Owner, id)
	if err != nil {
		return File{}, err
	}
	fs.status(f)
	fs.enqueue(f.ID)
	return f, nil
}

// enqueue queues a file's ingestion (once while queued).
func (fs *Files) enqueue(id string) {
	fs.mu.Lock()
	if fs.queued[id] {
		fs.mu.Unlock()
		return
	}
	fs.queued[id] = true
	fs.mu.Unlock()
	select {
	case fs.work <- id:
	default: // full: Run's next sweep of pending files finds it
		fs.mu.Lock()
		delete(fs.queued, id)
		fs.mu.Unlock()
	}
}

// status publishes a file's status to its owner's streams.
func (fs *Files) status(f File) {
	fs.mu.Lock()
	close(fs.changed)
	fs.changed = make(chan struct{})
	fs.mu.Unlock()
	if fs.cfg.Publisher == nil {
		return
	}
	fc := f
	fs.cfg.Publisher.Publish(AllEvent{Kind: KindAgent, ID: NewID(), Date: fs.now(), Owner: f.Owner,
		Agent: &AgentEvent{Type: AgentFileStatus, File: &fc}})
}

// pendingSweep is how often Run looks for files left processing (by a
// full queue, or another instance that died).
const pendingSweep = time.Minute

// Run ingests queued files one at a time until ctx ends; it first resumes
// the files a previous process left processing.
func (fs *Files) Run(ctx context.Context) {
	sweep := func() {
		pending, err := fs.cfg.Store.PendingFiles(ctx)
		if err != nil {
			if ctx.Err() == nil {
				fs.log.Error("files_pending", "err", err)
			}
			return
		}
		for _, f := range pending {
			fs.enqueue(f.ID)
		}
	}
	sweep()
	tick := time.NewTicker(pendingSweep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			sweep()
		case id := <-fs.work:
			fs.mu.Lock()
			delete(fs.queued, id)
			fs.mu.Unlock()
			fs.ingest(ctx, id)
		}
	}
}

// extractOnce is the chunks of f, a file still processing (or failed),
// extracted once while it processes: the first caller (a send inlining
// it, or its ingestion) extracts, the others wait for that. An
// extraction cut short by its caller's context is not shared: the next
// caller extracts again.
func (fs *Files) extractOnce(ctx context.Context, f File) ([]Chunk, error) {
	for {
		fs.mu.Lock()
		e, found := fs.extracting[f.ID]
		if !found {
			e = &extraction{done: make(chan struct{})}
			fs.extracting[f.ID] = e
		}
		fs.mu.Unlock()
		if !found {
			// f may be stale: its ingestion may have stored its chunks
			// and forgotten its extraction since f was read. Read now,
			// with e in place, the status tells: processed, the stored
			// chunks are the extraction.
			if cur, err := fs.cfg.Store.File(ctx, "", f.ID); err == nil && cur.Status == FileProcessed {
				e.chunks, e.err = fs.cfg.Store.FileChunks(ctx, f.ID)
				fs.forget(f.ID, e)
				close(e.done)
				return e.chunks, e.err
			}
			data, err := fs.cfg.Store.FileContent(ctx, "", f.ID)
			if err == nil {
				e.chunks, e.err = fs.cfg.Extractor.Extract(ctx, f.Name, f.MediaType, data)
			} else {
				e.err = fmt.Errorf("%w: %w", errFileRead, err)
			}
			if ctx.Err() != nil {
				e.err = ctx.Err()
			}
			if e.err != nil && (ctx.Err() != nil || errors.Is(e.err, errFileRead)) {
				fs.forget(f.ID, e) // not what the file's bytes say: not shared
			}
			close(e.done)
			return e.chunks, e.err
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil || (!errors.Is(e.err, context.Canceled) && !errors.Is(e.err, context.DeadlineExceeded)) {
			return e.chunks, e.err
		}
		fs.forget(f.ID, e) // its extractor left: extract here
	}
}

// errFileRead marks an extraction that could not read the file's bytes
// (deleted meanwhile, or the database failing): not the file's fault.
var errFileRead = errors.New("reading the file")

// forget drops the extraction of a file (only e, when e is not nil).
func (fs *Files) forget(id string, e *extraction) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if cur, ok := fs.extracting[id]; ok && (e == nil || cur == e) {
		delete(fs.extracting, id)
	}
}

// chunksOf is a file's chunks as its extractor cut them: a processed
// file's are read from the store, another's extracted (extractOnce).
func (fs *Files) chunksOf(ctx context.Context, f File) ([]Chunk, error) {
	if f.Status == FileProcessed {
		return fs.cfg.Store.FileChunks(ctx, f.ID)
	}
	chunks, err := fs.extractOnce(ctx, f)
	// Kept for the file's ingestion while it processes; else (failed,
	// or ingested meanwhile) nobody forgets it but here.
	if cur, serr := fs.cfg.Store.File(ctx, "", f.ID); serr != nil || cur.Status != FileProcessing {
		fs.forget(f.ID, nil)
	}
	return chunks, err
}

// ingest extracts, embeds and stores one file's chunks.
func (fs *Files) ingest(ctx context.Context, id string) {
	defer fs.forget(id, nil) // its extraction, shared while it processed
	if fs.cfg.Claim != nil {
		release, ok, err := fs.cfg.Claim(ctx, id)
		if err != nil && ctx.Err() == nil {
			fs.log.Error("file_ingest_claim", "file_id", id, "err", err) // the next sweep tries again
		}
		if err != nil || !ok {
			if err == nil {
				fs.log.Info("file_ingest_elsewhere", "file_id", id) // another instance ingests it
			}
			return
		}
		defer release()
	}
	// Read under the claim: another instance may have ingested it since
	// this one's sweep found it processing.
	f, err := fs.cfg.Store.File(ctx, "", id)
	if err != nil || f.Status != FileProcessing {
		return
	}
	chunks, err := fs.extractOnce(ctx, f)
	if errors.Is(err, errFileRead) {
		return // deleted meanwhile, or left processing for the next sweep
	}
	// The extraction is shared: embeddings go on a copy.
	chunks = slices.Clone(chunks)
	if err == nil && len(chunks) == 0 {
		err = errors.New("no text found")
	}
	if err == nil && fs.cfg.Embedder != nil {
		err = fs.embed(ctx, chunks)
	}
	if ctx.Err() != nil {
		return // shutting down: left processing, resumed at the next start
	}
	status, reason := FileProcessed, ""
	if err != nil {
		status, reason, chunks = FileFailed, err.Error(), nil
	}
	if err := fs.cfg.Store.FinishFile(ctx, id, chunks, status, reason); err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrNotFound) {
			fs.log.Error("file_ingest_store", "file_id", id, "err", err)
		}
		return
	}
	f.Status, f.Error, f.Chunks = status, reason, len(chunks)
	fs.log.Info("file_ingested", "file_id", id, "status", status, "chunks", len(chunks))
	fs.status(f)
}

// embed gives every chunk its embedding, in batches.
func (fs *Files) embed(ctx context.Context, chunks []Chunk) error {
	for i := 0; i < len(chunks); i += embedBatch {
		end := min(i+embedBatch, len(chunks))
		texts := make([]string, end-i)
		for j := range texts {
			texts[j] = embedText(chunks[i+j])
		}
		vecs, err := fs.cfg.Embedder.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embeddings: %w", err)
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("embeddings: %d vectors for %d texts", len(vecs), len(texts))
		}
		for j, v := range vecs {
			chunks[i+j].Vector = normalize(v)
		}
	}
	return nil
}

// embedText is what a chunk's embedding is made of: its heading and text.
func embedText(c Chunk) string {
	if c.Heading != "" {
		return c.Heading + "\n" + c.Text
	}
	return c.Text
}

// fileSearchWait bounds how long a file_search waits for the files a
// message attached to finish processing.
const fileSearchWait = 2 * time.Minute

// waitProcessed waits until none of files is processing (a file attached
// to the message that started the turn is searched once its chunks are
// stored), at most fileSearchWait.
func (fs *Files) waitProcessed(ctx context.Context, files []string) {
	ctx, cancel := context.WithTimeout(ctx, fileSearchWait)
	defer cancel()
	for {
		fs.mu.Lock()
		changed := fs.changed
		fs.mu.Unlock()
		pending := false
		for _, id := range files {
			if f, err := fs.cfg.Store.File(ctx, "", id); err == nil && f.Status == FileProcessing {
				pending = true
				break
			}
		}
		if !pending {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
