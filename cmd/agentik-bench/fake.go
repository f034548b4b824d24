package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/demo"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// runTag marks a user message so the fake can tell whose stream it
// writes: "run:KEY" anywhere in the text (plain text is ignored next to a
// [[tokens=N]] directive, so it does not change the answer).
const runTag = "run:"

// fake is the model: llmtest's OpenAI-compatible server on a loopback
// listener, wrapped so that, for tagged requests, it records when each
// token "tK" was written to the socket and how many bytes the stream took.
// Delivery latency is a client's read time minus that write time: both
// clocks are this process's monotonic clock.
type fake struct {
	URL string // base URL, ending in /v1

	llm *llmtest.Server
	srv *http.Server
	ln  net.Listener
	wg  sync.WaitGroup

	mu   sync.Mutex
	runs map[string]*stampLog

	embeds atomic.Int64 // embedding requests served
}

// stampLog is what the fake wrote for one tagged run.
type stampLog struct {
	mu    sync.Mutex
	at    []time.Time // at[k-1]: when token tK was written
	first time.Time   // when the stream's first byte was written
	req   time.Time   // when the first chat request tagged with the run arrived
	bytes int64       // SSE bytes written
	calls int         // chat requests tagged with the run's key
}

func startFake() (*fake, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake model: %w", err)
	}
	f := &fake{llm: llmtest.NewServer(), ln: ln, runs: map[string]*stampLog{}, URL: "http://" + ln.Addr().String() + "/v1"}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fake) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	if err != nil {
		_ = f.srv.Close()
	}
	f.wg.Wait()
	return err
}

// log returns the stamp log of a run, made on first use.
func (f *fake) log(key string) *stampLog {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.runs[key]
	if l == nil {
		l = &stampLog{}
		f.runs[key] = l
	}
	return l
}

// stamp is when token k of run key was written; ok=false if it was not.
func (f *fake) stamp(key string, k int) (time.Time, bool) {
	l := f.log(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if k < 1 || k > len(l.at) || l.at[k-1].IsZero() {
		return time.Time{}, false
	}
	return l.at[k-1], true
}

// calls is how many chat requests the fake got tagged with run key: one
// per model call of its turn, and one more for a title call (whose prompt
// quotes the turn's message, tag and directive included).
func (f *fake) calls(key string) int {
	l := f.log(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// firstByte is when the fake wrote the first byte of run key's stream;
// ok=false before it did.
func (f *fake) firstByte(key string) (time.Time, bool) {
	l := f.log(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, !l.first.IsZero()
}

// requested is when the fake got run key's first chat request; ok=false
// before it did.
func (f *fake) requested(key string) (time.Time, bool) {
	l := f.log(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.req, !l.req.IsZero()
}

// streamBytes is how many SSE bytes the fake wrote for run key.
func (f *fake) streamBytes(key string) int64 {
	l := f.log(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/embeddings") {
		f.embeds.Add(1)
		serveEmbeddings(w, r)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		arrived := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if key := lastTag(body); key != "" {
			l := f.log(key)
			l.mu.Lock()
			l.calls++
			if l.req.IsZero() {
				l.req = arrived
			}
			l.mu.Unlock()
			w = &stampWriter{ResponseWriter: w, log: l}
		}
	}
	f.llm.ServeHTTP(w, r)
}

// newRunTag is a fresh tag for the run keys of a bare side: an ID's
// random half. (Its first eight hex digits, the time in units of 65 s,
// gave the same keys to the bare sides of a minute, whose stamp logs then
// kept the first side's first byte: the walltime scenario read a bare
// answer of 57 s.)
func newRunTag() string { return agent.NewID()[16:] }

// lastTag is the KEY of the last "run:KEY" in b (the last user message
// comes last in a chat request).
func lastTag(b []byte) string {
	i := bytes.LastIndex(b, []byte(runTag))
	if i < 0 {
		return ""
	}
	rest := b[i+len(runTag):]
	n := 0
	for n < len(rest) && (rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= '0' && rest[n] <= '9' || rest[n] == '-' || rest[n] == '_') {
		n++
	}
	return string(rest[:n])
}

// stampWriter records the write time of every token in the chunks that
// pass through it.
type stampWriter struct {
	http.ResponseWriter
	log *stampLog
}

// Unwrap lets http.ResponseController reach Flush.
func (s *stampWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

var contentKey = []byte(`"content":"`)

func (s *stampWriter) Write(b []byte) (int, error) {
	now := time.Now()
	s.log.mu.Lock()
	if s.log.first.IsZero() {
		s.log.first = now
	}
	s.log.bytes += int64(len(b))
	if i := bytes.Index(b, contentKey); i >= 0 {
		rest := b[i+len(contentKey):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			for _, tok := range strings.Fields(string(rest[:j])) {
				if k := tokenIndex(tok); k > 0 {
					for len(s.log.at) < k {
						s.log.at = append(s.log.at, time.Time{})
					}
					s.log.at[k-1] = now
				}
			}
		}
	}
	s.log.mu.Unlock()
	return s.ResponseWriter.Write(b)
}

// tokenIndex is K of a token "tK", or 0.
func tokenIndex(tok string) int {
	if len(tok) < 2 || tok[0] != 't' {
		return 0
	}
	k, err := strconv.Atoi(tok[1:])
	if err != nil {
		return 0
	}
	return k
}

// prompt asks the fake for n tokens, delay apart, tagged with key.
func prompt(n int, delay time.Duration, key string) string {
	if delay > 0 {
		return fmt.Sprintf("[[tokens=%d delay=%s]] %s%s", n, delay, runTag, key)
	}
	return fmt.Sprintf("[[tokens=%d]] %s%s", n, runTag, key)
}

// embeddingDims is the length of the fake's embeddings: the 768 of issue
// 49's retrieval figures (llmtest's own, the demo's, have 256).
const embeddingDims = 768

// benchEmbedding is the fake's deterministic embedding of text:
// internal/llm/demo's, at embeddingDims.
func benchEmbedding(text string) []float32 { return demo.EmbeddingOf(text, embeddingDims) }

// serveEmbeddings answers POST /v1/embeddings with benchEmbedding.
var serveEmbeddings = demo.EmbeddingsHandler(embeddingDims)
