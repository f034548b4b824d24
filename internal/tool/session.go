package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// clientInfo is who we say we are to MCP servers.
var clientInfo = mcp.Implementation{Name: "agentik", Version: "1"}

// Reasons a call's context ends.
var (
	errIdle    = errors.New("idle timeout")
	errHardMax = errors.New("hard timeout")
)

// session is one live connection to an MCP server: for stdio, one run of
// its process. It breaks once (done closes) and is then replaced.
type session struct {
	cfg       ServerConfig
	log       *slog.Logger
	client    *client.Client
	transport string // the one in use: stdio, http or sse
	proc      *process
	cancel    context.CancelFunc // ends the session's context

	done    chan struct{}
	live    context.Context    // ends when done closes: what runs for the session's sake
	endLive context.CancelFunc // called by fail
	once    sync.Once
	err     error         // why it broke; set before done closes
	refresh chan struct{} // tools/list_changed arrived

	progMu   sync.Mutex
	progress map[string]*inflight // progress token → that running call (elicit.go)
	order    uint64               // calls sent so far (route.go)

	oauth      bool // the session signs its requests with a user's token
	stopListen func()
	wg         sync.WaitGroup
}

// connectDeps are what a connection needs from the Manager.
type connectDeps struct {
	log     *slog.Logger
	http    *http.Client
	getenv  func(string) string
	timeout time.Duration
	// httpOptions are added to a streamable HTTP transport's (OAuth).
	httpOptions []transport.StreamableHTTPCOption
}

// newSession is a session not yet connected, living at most as long as
// ctx.
func newSession(ctx context.Context) *session {
	s := &session{done: make(chan struct{}), refresh: make(chan struct{}, 1), progress: map[string]*inflight{}}
	s.live, s.endLive = context.WithCancel(ctx)
	return s
}

// connect opens a session to sc and lists its tools. transportHint is the
// transport that worked last time for an auto entry.
func connect(ctx context.Context, sc ServerConfig, d connectDeps, transportHint string) (*session, []mcp.Tool, error) {
	sctx, cancel := context.WithCancel(ctx)
	s := newSession(ctx)
	s.cfg, s.log, s.cancel = sc, d.log, cancel
	cctx, ccancel := context.WithTimeout(sctx, d.timeout)
	defer ccancel()
	var err error
	switch sc.Transport {
	case TransportStdio:
		err = s.openStdio(sctx, cctx, d)
	case TransportHTTP:
		err = s.openHTTP(sctx, cctx, d, false)
	case TransportSSE:
		err = s.openSSE(sctx, cctx, d)
	default: // auto: streamable HTTP first, then SSE
		if transportHint == TransportSSE {
			err = s.openSSE(sctx, cctx, d)
		} else {
			err = s.openHTTP(sctx, cctx, d, false)
			if err != nil && cctx.Err() == nil && !authRequired(err) {
				s.closeClient()
				if err2 := s.openSSE(sctx, cctx, d); err2 != nil {
					err = fmt.Errorf("streamable http: %w; sse: %w", err, err2)
				} else {
					err = nil
				}
			}
		}
	}
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	tools, err := s.listTools(cctx)
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("list tools: %w", err)
	}
	s.listen(sctx)
	return s, tools, nil
}

func (s *session) openStdio(sctx, cctx context.Context, d connectDeps) error {
	p, err := startProcess(s.cfg, d.getenv, d.log)
	if err != nil {
		return err
	}
	s.proc = p
	s.transport = TransportStdio
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-p.exited:
			s.fail(p.exitError())
		case <-s.done:
		}
	}()
	s.client = client.NewClient(transport.NewIO(newRoutingReader(s, p.stdout), orderedWriter{s, p.stdin}, nil), s.clientOptions()...)
	if err := s.start(sctx, cctx); err != nil {
		// If the process died, its exit says more.
		select {
		case <-p.reaped:
			return p.exitError()
		case <-time.After(reapGrace):
			return err
		}
	}
	return nil
}

func (s *session) openHTTP(sctx, cctx context.Context, d connectDeps, legacyListen bool) error {
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(d.http),
		transport.WithHTTPHeaders(s.cfg.Headers),
		transport.WithHTTPLogger(d.log),
	}
	opts = append(opts, d.httpOptions...)
	s.oauth = len(d.httpOptions) > 0
	if legacyListen {
		opts = append(opts, transport.WithContinuousListening())
	}
	t, err := transport.NewStreamableHTTP(s.cfg.URL, opts...)
	if err != nil {
		return err
	}
	s.transport = TransportHTTP
	s.client = client.NewClient(t, s.clientOptions()...)
	if err := s.start(sctx, cctx); err != nil {
		return err
	}
	// A server on the older session-based protocol sends list_changed only
	// on its standalone GET stream, which that protocol needs asking for.
	caps := s.client.GetServerCapabilities()
	if !legacyListen && !mcp.IsModernProtocol(s.client.ProtocolVersion()) && caps.Tools != nil && caps.Tools.ListChanged {
		s.closeClient()
		return s.openHTTP(sctx, cctx, d, true)
	}
	return nil
}

func (s *session) openSSE(sctx, cctx context.Context, d connectDeps) error {
	t, err := transport.NewSSE(s.cfg.URL,
		transport.WithHTTPClient(d.http),
		transport.WithHeaders(s.cfg.Headers),
		transport.WithSSELogger(d.log),
	)
	if err != nil {
		return err
	}
	s.transport = TransportSSE
	s.client = client.NewClient(t, s.clientOptions()...)
	s.client.OnConnectionLost(func(err error) { s.fail(fmt.Errorf("connection lost: %w", err)) })
	return s.start(sctx, cctx)
}

// start starts the client on the session's context and does the handshake
// within the connect timeout.
func (s *session) start(sctx, cctx context.Context) error {
	s.client.OnNotification(s.onNotification)
	if err := s.client.Start(sctx); err != nil {
		return err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = clientInfo
	if _, err := s.client.Initialize(cctx, req); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// listen asks a server on the 2026-07-28 protocol for tools/list_changed,
// which that protocol delivers only on request.
func (s *session) listen(sctx context.Context) {
	caps := s.client.GetServerCapabilities()
	if caps.Tools == nil || !caps.Tools.ListChanged || !mcp.IsModernProtocol(s.client.ProtocolVersion()) {
		return
	}
	stop, err := s.client.ListenAsync(sctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) {
		s.log.Debug("mcp_listen_ended", "err", s.cfg.redact(err.Error()))
	})
	if err == nil {
		s.stopListen = stop
	}
}

// onNotification runs on the transport's reader: it must not block.
func (s *session) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged),
		// The 2026-07-28 listen stream is open from here on: a change made
		// between the first tools/list and this moment sent no
		// notification to us, so list again.
		string(mcp.MethodNotificationSubscriptionsAcknowledged):
		select {
		case s.refresh <- struct{}{}:
		default:
		}
	case string(mcp.MethodNotificationProgress):
		token := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
		s.progMu.Lock()
		inf := s.progress[token]
		s.progMu.Unlock()
		if inf != nil {
			inf.onProgress(n)
		}
	case string(mcp.MethodNotificationMessage):
		s.onLog(n)
	}
}

// listTools lists every tool, following pages.
func (s *session) listTools(ctx context.Context) ([]mcp.Tool, error) {
	res, err := s.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		s.failIfBroken(ctx, err)
		return nil, err
	}
	return res.Tools, nil
}

// fail marks the session broken; the first reason wins.
func (s *session) fail(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
		s.endLive()
	})
}

// reapGrace bounds the wait, after a stdio pipe broke, for the process
// that held it to be reaped.
const reapGrace = time.Second

// failIfBroken fails the session if err is the transport's (the connection
// or process is gone) rather than the server's answer or ctx's end.
func (s *session) failIfBroken(ctx context.Context, err error) {
	var te *transport.Error
	if ctx.Err() != nil || !errors.As(err, &te) || s.oauth && authRequired(err) {
		return // a refused token breaks nothing: it is refreshed, or the user signs in (oauth.go)
	}
	if s.proc != nil {
		// A stdio pipe breaks because the process died: say how. The
		// leader is reaped at once; killing the rest of its group may
		// take a while, which exitError waits for.
		select {
		case <-s.proc.reaped:
			s.fail(s.proc.exitError())
			return
		case <-time.After(reapGrace):
		}
	}
	s.fail(err)
}

// closeClient closes the client; s.client stays set, since calls may still
// be reading it.
func (s *session) closeClient() {
	if s.client != nil {
		_ = s.client.Close()
	}
}

// close ends the session and everything it started, and waits for it.
func (s *session) close() {
	s.fail(errors.New("closed"))
	if s.stopListen != nil {
		s.stopListen()
	}
	s.cancel()
	s.closeClient()
	if s.proc != nil {
		s.proc.stop()
	}
	s.wg.Wait()
}

// callOptions bound one call.
type callOptions struct {
	idle, max time.Duration
	maxBytes  int
	token     string
}

// call runs a tool. The call ends after opt.idle without progress, or after
// opt.max in all.
func (s *session) call(ctx context.Context, tool string, args json.RawMessage, opt callOptions) (agent.ToolOutput, error) {
	ctx, cancelMax := context.WithTimeoutCause(ctx, opt.max, errHardMax)
	defer cancelMax()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timerMu sync.Mutex
	idle := time.AfterFunc(opt.idle, func() { cancel(errIdle) })
	defer func() {
		timerMu.Lock()
		idle.Stop()
		timerMu.Unlock()
	}()
	inf := &inflight{hooks: agent.ToolHooksFrom(ctx), ctx: ctx, reset: func(stop bool) {
		timerMu.Lock()
		if stop {
			idle.Stop()
		} else {
			idle.Reset(opt.idle)
		}
		timerMu.Unlock()
	}}
	ctx = withInflight(ctx, inf)
	s.progMu.Lock()
	s.progress[opt.token] = inf
	if s.proc == nil { // over stdio, when it is written (route.go)
		s.order++
		inf.order = s.order
	}
	s.progMu.Unlock()
	defer func() {
		s.progMu.Lock()
		delete(s.progress, opt.token)
		s.progMu.Unlock()
	}()

	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{ProgressToken: opt.token}
	res, err := s.client.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			switch context.Cause(ctx) {
			case errIdle:
				return agent.ToolOutput{}, &timeoutError{fmt.Sprintf("no answer or progress within %s", opt.idle)}
			case errHardMax:
				return agent.ToolOutput{}, &timeoutError{fmt.Sprintf("still running after %s, the most a call may take", opt.max)}
			}
			return agent.ToolOutput{}, fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
		s.failIfBroken(ctx, err)
		select {
		case <-s.done:
			return agent.ToolOutput{}, s.err
		default:
		}
		return agent.ToolOutput{}, err
	}
	text := capText(resultText(res), opt.maxBytes)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return agent.ToolOutput{}, &toolError{text}
	}
	return agent.ToolOutput{Text: text, Images: resultImages(res, opt.maxBytes), Resources: resultResources(res, s.cfg.Name)}, nil
}

// timeoutError is a call that ran out of time; the server may be hung.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// toolError is an error the tool itself reported (isError): its text goes
// to the model as is.
type toolError struct{ text string }

func (e *toolError) Error() string { return e.text }
