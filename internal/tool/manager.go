package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/mcp"
)

// Defaults of Options.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultMaxCallTimeout = 10 * time.Minute
	DefaultMaxResultBytes = 100_000
	DefaultStartTimeout   = 60 * time.Second
	DefaultRestartBackoff = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultProbeTimeout   = 5 * time.Second
)

// stableAfter is how long a session must have lived for the restart backoff
// to start over from its minimum.
const stableAfter = 30 * time.Second

// Options tune a Manager. Zero values take the defaults above.
type Options struct {
	Logger *slog.Logger
	// OnChange is called on every state change of a server, from the
	// Manager's goroutines, one call at a time. It must not block long.
	OnChange func(agent.ToolServer)
	// OnResourceUpdated is called when a server says a resource that was
	// subscribed to (Subscribe) changed; from the transport's reader, so
	// it must not block.
	OnResourceUpdated func(server, uri string)
	// CallTimeout ends a call that neither answered nor reported progress
	// for that long; MaxCallTimeout ends any call after that long.
	CallTimeout, MaxCallTimeout time.Duration
	// MaxResultBytes caps a tool result; the rest is cut with a note.
	MaxResultBytes int
	// StartTimeout bounds starting a server: its handshake and tool list.
	StartTimeout time.Duration
	// RestartBackoff is the first wait before restarting a server that died
	// or failed to start; it doubles up to MaxBackoff.
	RestartBackoff, MaxBackoff time.Duration
	// ProbeTimeout: after a call times out, the server must answer
	// tools/list within this long, or it is taken as hung and restarted.
	ProbeTimeout time.Duration
	// OAuth signs users in to remote servers that ask for it (oauth.go);
	// nil: a server's 401 is an error like any other.
	OAuth *OAuthOptions
	// PerUserIdle closes a user's session of a per-user server unused that
	// long (peruser.go).
	PerUserIdle time.Duration
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxCallTimeout <= 0 {
		o.MaxCallTimeout = DefaultMaxCallTimeout
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.MaxCallTimeout < o.CallTimeout {
		o.MaxCallTimeout = o.CallTimeout
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = DefaultRestartBackoff
	}
	if o.MaxBackoff < o.RestartBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.RestartBackoff)
	}
	if o.OAuth != nil {
		o.OAuth.defaults()
	}
	if o.PerUserIdle <= 0 {
		o.PerUserIdle = DefaultPerUserIdle
	}
}

// Manager runs the MCP servers of a Config, supervises them and exposes
// their tools to the model. It implements agent.Tools.
type Manager struct {
	opt    Options
	log    *slog.Logger
	deps   connectDeps
	httpT  *http.Transport
	ctx    context.Context // the Manager's life: of sessions made outside a supervisor
	cancel context.CancelFunc
	wg     sync.WaitGroup

	srvMu    sync.RWMutex
	servers  []*supervisor // config order; replaced, never changed in place (list)
	changeMu sync.Mutex    // one Put or Remove at a time

	mu    sync.RWMutex
	specs []agent.ToolSpec
	names map[string]toolRef // name the model sees → server and tool

	subs resourceSubs // resources.go

	notifyMu sync.Mutex
	closed   atomic.Bool
	token    atomic.Int64
}

var (
	_ agent.Tools        = (*Manager)(nil)
	_ agent.ContentTools = (*Manager)(nil)
)

type toolRef struct {
	srv  *supervisor
	tool string
	// Who may call it (visibility): a tool only apps may call is not in
	// the model's specs, and the model's call of it is an unknown tool.
	model, app bool
}

// Start starts every enabled server of cfg in the background and returns at
// once: slow servers do not hold it up. ctx bounds the Manager's life like
// Close does.
func Start(ctx context.Context, cfg Config, opt Options) (*Manager, error) {
	opt.defaults()
	seen := map[string]bool{}
	for _, sc := range cfg.Servers {
		if seen[sc.Name] {
			return nil, &ConfigError{Server: sc.Name, Msg: "defined twice"}
		}
		seen[sc.Name] = true
		if sc.PerUser && !sc.Disabled {
			if opt.OAuth == nil || opt.OAuth.Credentials == nil {
				return nil, &ConfigError{Server: sc.Name, Field: "auth", Msg: errSecretKeyNeeded.Error()}
			}
			if !sc.UserSecret && !canOAuth(sc) {
				return nil, &ConfigError{Server: sc.Name, Field: "auth", Msg: fmt.Sprintf("%q without %s in a header signs each user in with OAuth, which needs no Authorization header of the entry's own", AuthPerUser, userSecretVar)}
			}
		}
	}
	ht := http.DefaultTransport.(*http.Transport).Clone()
	m := &Manager{
		opt: opt, log: opt.Logger, httpT: ht,
		names: map[string]toolRef{},
	}
	m.deps = connectDeps{log: opt.Logger, http: &http.Client{Transport: ht}, getenv: os.Getenv, timeout: opt.StartTimeout}
	ctx, m.cancel = context.WithCancel(ctx)
	m.ctx = ctx
	for _, sc := range cfg.Servers {
		m.servers = append(m.servers, m.newSupervisor(sc))
	}
	for _, s := range m.list() {
		m.launch(s)
	}
	return m, nil
}

// newSupervisor makes the supervisor of sc, not yet running.
func (m *Manager) newSupervisor(sc ServerConfig) *supervisor {
	s := &supervisor{m: m, cfg: sc, log: m.opt.Logger.With("mcp_server", sc.Name), state: agent.ToolServerStarting, started: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
	switch {
	case sc.UserSecret:
		s.perUser = newPerUser(s) // peruser.go
	case m.opt.OAuth != nil && canOAuth(sc):
		s.oauth = newOAuthServer(s, m.opt.OAuth)
		s.oauth.on = s.oauth.on || sc.PerUser
	}
	if sc.Disabled {
		s.state = agent.ToolServerDisabled
		close(s.started)
	}
	s.transport = sc.Transport
	if s.transport == TransportAuto {
		s.transport = TransportHTTP
	}
	return s
}

// launch runs s until the Manager closes or s is replaced (Put, Remove);
// a disabled server does not run.
func (m *Manager) launch(s *supervisor) {
	if s.state == agent.ToolServerDisabled {
		s.stop = func() {}
		close(s.done)
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	s.stop = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(s.done)
		s.run(ctx)
	}()
}

// list is the servers now, in config order; the slice is never changed
// in place (Put and Remove make a new one).
func (m *Manager) list() []*supervisor {
	m.srvMu.RLock()
	defer m.srvMu.RUnlock()
	return m.servers
}

// checkServer is Start's check of one entry.
func (m *Manager) checkServer(sc ServerConfig) error {
	if sc.PerUser && !sc.Disabled {
		if m.opt.OAuth == nil || m.opt.OAuth.Credentials == nil {
			return &ConfigError{Server: sc.Name, Field: "auth", Msg: errSecretKeyNeeded.Error()}
		}
		if !sc.UserSecret && !canOAuth(sc) {
			return &ConfigError{Server: sc.Name, Field: "auth", Msg: fmt.Sprintf("%q without %s in a header signs each user in with OAuth, which needs no Authorization header of the entry's own", AuthPerUser, userSecretVar)}
		}
	}
	return nil
}

// Put starts the server of sc while the Manager runs (the admin panel):
// a server of that name is stopped and replaced in its place (a restart,
// or a changed entry), else sc is added last. Its tools are offered once
// it is ready; OnChange reports its states as Start's servers'.
func (m *Manager) Put(sc ServerConfig) error {
	if err := m.checkServer(sc); err != nil {
		return err
	}
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	if m.closed.Load() {
		return agent.Errorf(agent.CodeUnavailable, "the tool servers are shutting down")
	}
	s := m.newSupervisor(sc)
	old := m.list()
	next := make([]*supervisor, 0, len(old)+1)
	var prev *supervisor
	for _, o := range old {
		if o.cfg.Name == sc.Name {
			prev = o
			next = append(next, s)
			continue
		}
		next = append(next, o)
	}
	if prev == nil {
		next = append(next, s)
	} else {
		prev.stop()
		<-prev.done
	}
	m.srvMu.Lock()
	m.servers = next
	m.srvMu.Unlock()
	m.rebuild()
	m.launch(s)
	m.notify(s.snapshot())
	return nil
}

// Remove stops the server named name and withdraws its tools; not_found
// when no server has that name.
func (m *Manager) Remove(name string) error {
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	old := m.list()
	next := make([]*supervisor, 0, len(old))
	var prev *supervisor
	for _, o := range old {
		if o.cfg.Name == name {
			prev = o
			continue
		}
		next = append(next, o)
	}
	if prev == nil {
		return agent.Errorf(agent.CodeNotFound, "no tool server %q", agent.Shorten(name, 80))
	}
	prev.stop()
	<-prev.done
	m.srvMu.Lock()
	m.servers = next
	m.srvMu.Unlock()
	m.rebuild()
	ts := prev.snapshot()
	ts.State, ts.Tools = agent.ToolServerDisabled, []string{}
	m.notify(ts)
	return nil
}

// Config is the entry the server named name runs with.
func (m *Manager) Config(name string) (ServerConfig, bool) {
	for _, s := range m.list() {
		if s.cfg.Name == name {
			return s.cfg, true
		}
	}
	return ServerConfig{}, false
}

// Specs lists the tools the model may call now, in config order of their
// servers. A server that is restarting keeps its last known tools: calling
// them fails fast until it is back. A server still in its first start is
// waited for (see WaitStarted), so a turn begun right after agentik
// started gets the tools of a slow server instead of running without them.
func (m *Manager) Specs(ctx context.Context) []agent.ToolSpec {
	m.WaitStarted(ctx)
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]agent.ToolSpec(nil), m.specs...)
}

// WaitStarted returns once every enabled server has finished its first
// start (ready or failed), ctx ends, or the start timeout passes: a first
// start is bounded by it, so the bound only matters if Close races it.
func (m *Manager) WaitStarted(ctx context.Context) {
	t := time.NewTimer(m.opt.StartTimeout)
	defer t.Stop()
	for _, s := range m.list() {
		select {
		case <-s.started:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}

// Starting names the enabled servers still in their first start, in config
// order; /ready is not ready while there are any.
func (m *Manager) Starting() []string {
	var out []string
	for _, s := range m.list() {
		select {
		case <-s.started:
		default:
			out = append(out, s.cfg.Name)
		}
	}
	return out
}

// Call runs the tool the model knows as name with arguments (JSON text).
// Every failure is an *agent.Error with agent.CodeToolError: unknown tool,
// bad arguments, server down, timeout, or the tool's own error.
func (m *Manager) Call(ctx context.Context, name, arguments string) (string, error) {
	out, err := m.CallContent(ctx, name, arguments)
	return out.Text, err
}

// CallContent is Call with the images of the result (agent.ContentTools).
func (m *Manager) CallContent(ctx context.Context, name, arguments string) (agent.ToolOutput, error) {
	m.mu.RLock()
	ref, ok := m.names[name]
	m.mu.RUnlock()
	if !ok && len(m.Starting()) > 0 {
		// A turn resumed right after a start calls before any listing:
		// its server may be about to offer the tool.
		m.WaitStarted(ctx)
		m.mu.RLock()
		ref, ok = m.names[name]
		m.mu.RUnlock()
	}
	byApp := false
	if h := agent.ToolHooksFrom(ctx); h != nil {
		byApp = h.App
	}
	switch {
	case !ok, !byApp && !ref.model: // never offered to the model
		return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "unknown tool %q", name)
	case byApp && !ref.app:
		return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "tool %q is for the model only: its server's apps may not call it", name)
	}
	args := json.RawMessage(strings.TrimSpace(arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "arguments of %s must be a JSON object", name)
	}
	return ref.srv.call(ctx, ref.tool, args)
}

// Servers returns the state of every configured server, in config order.
func (m *Manager) Servers() []agent.ToolServer {
	return m.snapshots(m.list())
}

// snapshots is the state of servers under m.mu: a server that has just
// listed its tools shows them with its new state (set changes both under
// m.mu), never ready with the names of its last listing.
func (m *Manager) snapshots(servers []*supervisor) []agent.ToolServer {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]agent.ToolServer, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.snapshot())
	}
	return out
}

// Close stops every server (killing stdio servers' process groups) and
// waits for all of the Manager's goroutines. OnChange is not called after
// Close has begun. Calling it again does nothing more.
func (m *Manager) Close() error {
	m.changeMu.Lock() // a Put launches no server after this
	m.closed.Store(true)
	m.changeMu.Unlock()
	m.cancel()
	m.wg.Wait()
	m.httpT.CloseIdleConnections()
	return nil
}

// rebuild recomputes the names the model sees from every server's tools.
// Servers earlier in config order win the plain names on a clash.
func (m *Manager) rebuild() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rebuildLocked()
}

// rebuildLocked is rebuild with m.mu held.
func (m *Manager) rebuildLocked() {
	taken := map[string]bool{}
	names := map[string]toolRef{}
	var specs []agent.ToolSpec
	for _, s := range m.list() {
		s.mu.Lock()
		exposed := make([]string, 0, len(s.tools))
		apps := map[string]string{}
		var vis map[string][]string
		for _, t := range s.tools {
			if !s.cfg.offers(t.Name) || !callable(t) {
				continue // allowedTools / excludedTools, or a tool agentik cannot call
			}
			name := uniqueName(s.cfg.Name, t.Name, taken)
			taken[name] = true
			model, app := visibility(t)
			names[name] = toolRef{s, t.Name, model, app}
			exposed = append(exposed, name)
			if uri := appURI(t); uri != "" {
				apps[name] = uri
			}
			if !model || !app { // one of the two: the other is not both
				if vis == nil {
					vis = map[string][]string{}
				}
				only := "app"
				if model {
					only = "model"
				}
				vis[name] = []string{only}
			}
			if model {
				specs = append(specs, agent.ToolSpec{Name: name, Description: t.Description, Parameters: schema(t)})
			}
		}
		s.exposed, s.apps, s.vis = exposed, apps, vis
		s.mu.Unlock()
	}
	m.names, m.specs = names, specs
}

// schema is a tool's input schema as the model wants it: an object.
func schema(t mcp.Tool) json.RawMessage {
	in := t.InputSchema
	if in.Type == "" {
		in.Type = "object"
	}
	if in.Properties == nil {
		in.Properties = map[string]any{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// notify reports a server's state, one call at a time, never after Close.
func (m *Manager) notify(ts agent.ToolServer) {
	if m.opt.OnChange == nil {
		return
	}
	m.notifyMu.Lock()
	defer m.notifyMu.Unlock()
	if m.closed.Load() {
		return
	}
	m.opt.OnChange(ts)
}

// supervisor keeps one configured MCP server running.
type supervisor struct {
	m   *Manager
	cfg ServerConfig
	log *slog.Logger

	// started is closed when the first start has ended, either way (or at
	// once for a disabled server).
	started chan struct{}
	oauth   *oauthServer  // a remote server that may ask for a sign-in; else nil
	perUser *perUser      // a per-user server with each user's secret; else nil
	wake    chan struct{} // a sign-in ended the wait of an auth_required server
	stop    func()        // ends run (Put, Remove)
	done    chan struct{} // closed once run returned (or at once for a disabled server)

	mu        sync.Mutex
	state     string
	lastErr   string
	transport string
	sess      *session            // set while ready
	tools     []mcp.Tool          // the last listing
	exposed   []string            // names of tools as the model sees them
	apps      map[string]string   // exposed name → its MCP App's ui:// resource (apps.go)
	vis       map[string][]string // exposed name → who alone may call it (apps.go visibility)
}

func (s *supervisor) snapshot() agent.ToolServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return agent.ToolServer{
		Name: s.cfg.Name, Transport: s.transport, State: s.state, Error: s.lastErr,
		Tools: append([]string{}, s.exposed...), Apps: maps.Clone(s.apps), Visibility: maps.Clone(s.vis),
	}
}

// set changes the state (and, when tools is non-nil, the tools), then
// rebuilds the names and reports the change if anything changed.
//
// With tools, the state, the tools and the names change under m.mu (held
// first, rebuild's order): Servers, Specs and Call see the server either
// before or ready with its tools, never ready with the last listing's
// names (before, a client polling for "ready" could read a ready server
// with no tools, and a turn could start without them).
func (s *supervisor) set(state string, sess *session, err error, tools []mcp.Tool) {
	if tools != nil {
		s.m.mu.Lock()
	}
	s.mu.Lock()
	msg := ""
	if err != nil {
		msg = s.cfg.redact(err.Error())
	}
	changed := s.state != state || s.lastErr != msg || (tools != nil && !sameTools(s.tools, tools))
	s.state, s.lastErr, s.sess = state, msg, sess
	if sess != nil {
		s.transport = sess.transport
	}
	if tools != nil {
		s.tools = tools
	}
	s.mu.Unlock()
	if tools != nil {
		if changed {
			s.m.rebuildLocked()
		}
		s.m.mu.Unlock()
	}
	if !changed {
		return
	}
	ts := s.snapshot()
	s.log.Info("mcp_server_state", "state", ts.State, "error", ts.Error, "tools", len(ts.Tools))
	s.m.notify(ts)
}

// sameTools reports whether two listings show the model and the apps the
// same tools: names, descriptions, schemas, and what rebuild reads of
// their _meta (the app a tool names, who may call it).
func sameTools(a, b []mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || string(schema(a[i])) != string(schema(b[i])) || appURI(a[i]) != appURI(b[i]) {
			return false
		}
		am, aa := visibility(a[i])
		bm, ba := visibility(b[i])
		if am != bm || aa != ba {
			return false
		}
	}
	return true
}

// run keeps the server up until ctx ends: connect, serve until the session
// breaks, wait, again.
func (s *supervisor) run(ctx context.Context) {
	var startedOnce sync.Once
	firstDone := func() { startedOnce.Do(func() { close(s.started) }) }
	defer func() {
		s.mu.Lock()
		s.sess = nil
		s.mu.Unlock()
		firstDone()
		if s.oauth != nil {
			s.oauth.closeSessions()
		}
		if s.perUser != nil {
			s.perUser.closeAll()
		}
	}()
	backoff := s.m.opt.RestartBackoff
	hint := ""
	quick := 0 // connects again at once after a 401 (see signIn)
	for {
		began := time.Now()
		d, err := s.connectDeps(ctx)
		var sess *session
		var tools []mcp.Tool
		if err == nil {
			cfg := s.cfg
			if s.perUser != nil {
				cfg = s.perUser.listConfig(ctx)
			}
			sess, tools, err = connect(ctx, cfg, d, hint)
		}
		if ctx.Err() != nil {
			if sess != nil {
				sess.close()
			}
			return
		}
		if err != nil && s.oauth != nil && authRequired(err) {
			if !s.signIn(ctx, err, &quick, firstDone) { // oauth.go
				return
			}
			continue
		}
		if err != nil {
			// A server that failed its first start is retried with the
			// same backoff as one that died.
			s.set(agent.ToolServerFailed, nil, err, nil)
			firstDone()
		} else {
			hint, quick = sess.transport, 0
			s.log.Info("mcp_server_connected", "transport", sess.transport, "protocol", sess.client.ProtocolVersion(), "tools", len(tools))
			if tools == nil {
				tools = []mcp.Tool{}
			}
			s.watchResources(ctx, sess) // resources.go: before calls can reach it
			s.set(agent.ToolServerReady, sess, nil, tools)
			firstDone() // after set: whoever waited sees the tools
			err = s.serve(ctx, sess)
			// Calls fail fast from here on, before the slow close.
			if ctx.Err() == nil {
				s.set(agent.ToolServerRestarting, nil, err, nil)
			}
			sess.close()
			if ctx.Err() != nil {
				return
			}
			if time.Since(began) > stableAfter {
				backoff = s.m.opt.RestartBackoff
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, s.m.opt.MaxBackoff)
	}
}

// serve refreshes the tools on tools/list_changed until the session breaks
// or ctx ends, and returns why.
func (s *supervisor) serve(ctx context.Context, sess *session) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sess.done:
			return sess.err
		case <-sess.refresh:
			// Within StartTimeout, and no longer than the session lives: a
			// call's probe that finds the server hung fails the session, and
			// it is restarted at once, not after a listing that gets no
			// answer.
			lctx, cancel := context.WithTimeout(sess.live, s.m.opt.StartTimeout)
			tools, err := sess.listTools(lctx)
			cancel()
			if err != nil {
				if sess.live.Err() == nil { // else the select returns why
					s.log.Warn("mcp_list_tools", "err", s.cfg.redact(err.Error()))
				}
				continue
			}
			if tools == nil {
				tools = []mcp.Tool{}
			}
			s.set(agent.ToolServerReady, sess, nil, tools)
		}
	}
}

// probe asks a server whose call timed out for its tools. A server that
// cannot answer that either is hung (deadlocked, stopped, its pipe
// unread): its session is failed, so the supervisor kills and restarts it.
// A server that answers was only slow with that one call.
func (s *supervisor) probe(ctx context.Context, sess *session) {
	pctx, cancel := context.WithTimeout(ctx, s.m.opt.ProbeTimeout)
	defer cancel()
	if _, err := sess.listTools(pctx); err == nil || ctx.Err() != nil {
		return
	}
	s.log.Warn("mcp_server_hung", "probe_timeout", s.m.opt.ProbeTimeout)
	sess.fail(fmt.Errorf("unresponsive: a call timed out and tools/list got no answer within %s", s.m.opt.ProbeTimeout))
}

// call runs one tool of this server, or fails fast when it is not ready.
func (s *supervisor) call(ctx context.Context, tool string, args json.RawMessage) (agent.ToolOutput, error) {
	s.mu.Lock()
	sess, state, lastErr := s.sess, s.state, s.lastErr
	s.mu.Unlock()
	if s.perUser != nil {
		return s.perUser.call(ctx, tool, args)
	}
	if s.oauth != nil && s.cfg.PerUser {
		return s.oauthPerUser(ctx, tool, args, sess, state) // peruser.go
	}
	if s.oauth != nil {
		if out, err, done := s.oauth.call(ctx, tool, args, sess, state); done {
			return out, err
		}
	}
	if sess == nil {
		msg := fmt.Sprintf("tool server %q is %s", s.cfg.Name, state)
		if lastErr != "" {
			msg += ": " + lastErr
		}
		return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "%s", msg)
	}
	s.log.Debug("mcp_call", "tool", tool, "arguments", s.cfg.redact(string(args)))
	out, err := sess.call(ctx, tool, args, s.callOptions())
	return s.result(ctx, sess, tool, out, err)
}

// callOptions bound a call of this server's tools.
func (s *supervisor) callOptions() callOptions {
	return callOptions{
		idle: s.m.opt.CallTimeout, max: s.m.opt.MaxCallTimeout, maxBytes: s.m.opt.MaxResultBytes,
		token: fmt.Sprintf("agentik-%d", s.m.token.Add(1)),
	}
}

// result maps what a call returned to what the model sees.
func (s *supervisor) result(ctx context.Context, sess *session, tool string, out agent.ToolOutput, err error) (agent.ToolOutput, error) {
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "%s", te.text)
		}
		var to *timeoutError
		if errors.As(err, &to) && ctx.Err() == nil {
			s.probe(ctx, sess)
		}
		// Transport errors may quote a whole response body.
		msg := capText(s.cfg.redact(err.Error()), s.m.opt.MaxResultBytes)
		return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "%s: %s", tool, msg)
	}
	return out, nil
}
