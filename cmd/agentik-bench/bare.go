package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// bareQueue is each bare subscriber's buffer of frames; a full buffer drops
// the frame (counted as lost).
const bareQueue = 4096

// bare is the baseline server: the least a relay must do. It streams the
// fake model with go-openai and broadcasts each delta, encoded once, to
// WebSocket and SSE subscribers: no runner, no event log, no seq, no
// replay. It also serves fixed bytes for the REST floor.
type bare struct {
	client  *openai.Client
	closing chan struct{}
	wg      sync.WaitGroup // streams and handlers
	dropped atomic.Int64

	mu   sync.Mutex
	subs map[string]map[*bareSub]struct{} // by run key; "" is every run
	list []byte
}

type bareSub struct {
	ws bool
	ch chan []byte
}

// serveBare runs the bare baseline until ctx ends; it prints
// "listening ADDR" on stdout first.
func serveBare(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bare: listen: %w", err)
	}
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = getenv("OPENAI_BASE_URL")
	b := &bare{client: openai.NewClientWithConfig(cfg), closing: make(chan struct{}), subs: map[string]map[*bareSub]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /ws", b.handleWS)
	mux.HandleFunc("GET /sse", b.handleSSE)
	mux.HandleFunc("POST /send", b.handleSend)
	mux.HandleFunc("GET /list", b.handleList)
	mux.HandleFunc("PUT /list", b.handleSetList)
	mux.HandleFunc("GET /dropped", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, b.dropped.Load()) })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	close(b.closing)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	b.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (b *bare) add(key string, s *bareSub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.subs[key]
	if m == nil {
		m = map[*bareSub]struct{}{}
		b.subs[key] = m
	}
	m[s] = struct{}{}
}

func (b *bare) remove(key string, s *bareSub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs[key], s)
}

// publish encodes ev once per transport and queues it for the run's
// subscribers and the subscribers of every run.
func (b *bare) publish(key string, typ string, ev any) {
	inner, _ := json.Marshal(ev)
	wsFrame := fmt.Appendf(nil, `{"type":"event","sub":"b","event":{"type":"conversation","seq":0,"conversation_id":%q,"event":%s}}`, key, inner)
	sseFrame := fmt.Appendf(nil, "event: %s\ndata: %s\n\n", typ, inner)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range []string{key, ""} {
		for s := range b.subs[k] {
			f := sseFrame
			if s.ws {
				f = wsFrame
			}
			select {
			case s.ch <- f:
			default:
				b.dropped.Add(1)
			}
		}
	}
}

func (b *bare) handleWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	b.wg.Add(1)
	defer b.wg.Done()
	key := r.URL.Query().Get("run")
	s := &bareSub{ws: true, ch: make(chan []byte, bareQueue)}
	b.add(key, s)
	defer b.remove(key, s)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	readDone := make(chan struct{})
	go func() { // the reader: notices the client leaving
		defer close(readDone)
		defer cancel()
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}()
	defer func() { _ = c.CloseNow(); <-readDone }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.closing:
			return
		case f := <-s.ch:
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.Write(wctx, websocket.MessageText, f)
			wcancel()
			if err != nil {
				return
			}
		}
	}
}

func (b *bare) handleSSE(w http.ResponseWriter, r *http.Request) {
	b.wg.Add(1)
	defer b.wg.Done()
	key := r.URL.Query().Get("run")
	s := &bareSub{ch: make(chan []byte, bareQueue)}
	b.add(key, s)
	defer b.remove(key, s)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-b.closing:
			return
		case f := <-s.ch:
			if _, err := w.Write(f); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// handleSend streams the fake's answer to the body's text and relays it.
func (b *bare) handleSend(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("run")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-b.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		b.stream(ctx, key, string(body))
		b.publish(key, agent.EventEnd, map[string]string{"type": agent.EventEnd})
	}()
	w.WriteHeader(http.StatusAccepted)
}

func (b *bare) stream(ctx context.Context, key, text string) {
	st, err := b.client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: "fake-model", Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
	})
	if err != nil {
		return
	}
	defer st.Close()
	type appendText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return
		}
		if len(resp.Choices) == 0 || resp.Choices[0].Delta.Content == "" {
			continue
		}
		b.publish(key, agent.EventAppendText, appendText{agent.EventAppendText, resp.Choices[0].Delta.Content})
	}
}

func (b *bare) handleList(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	body := b.list
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (b *bare) handleSetList(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.list = body
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
