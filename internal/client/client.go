// Package client speaks agentik's WebSocket protocol (docs/PROTOCOL.md) for
// terminal tools: commands with correlated replies, and subscriptions that
// survive disconnects and server restarts. After a reconnect every
// subscription resumes from the last seq it delivered, so its consumer sees
// every stored event exactly once, in order.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// Defaults of Config.
const (
	DefaultURL        = "http://127.0.0.1:8080"
	DefaultMaxBackoff = 2 * time.Second
)

// Sizes and timeouts of a client.
const (
	// readLimit caps one server frame: an event with a 10 MB image fits.
	readLimit = 64 << 20
	// writeTimeout bounds every command write.
	writeTimeout = 10 * time.Second
	// queueLimit is how many events a subscription keeps for a consumer
	// that reads slowly; past it the subscription drops what follows and
	// resumes from its cursor once the consumer has caught up.
	queueLimit = 1 << 16
	minBackoff = 50 * time.Millisecond
)

// ErrDisconnected fails a command whose connection broke before its reply
// came. Commands that are safe to repeat are retried on the next
// connection instead.
var ErrDisconnected = errors.New("client: disconnected before the reply")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("client: closed")

// Config says where the server is.
type Config struct {
	// URL is the server's base URL (http, https, ws or wss); DefaultURL
	// when empty. The socket is at /agentik/ws below it.
	URL string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// MaxBackoff caps the wait between reconnect attempts.
	MaxBackoff time.Duration
	// HTTPClient dials the socket; http.DefaultClient when nil.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Client is a connection to an agentik server that reconnects by itself.
// It is safe for concurrent use.
type Client struct {
	cfg   Config
	wsURL string
	log   *slog.Logger
	ctx   context.Context // the client's life; cancelled by Close
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu      sync.Mutex
	cur     *conn         // nil while disconnected
	ready   chan struct{} // closed when cur is set
	err     error         // set when the client gave up for good
	nextID  int
	pending map[string]*call
	subs    map[string]*Sub // by server sub id, on cur
}

// conn is one WebSocket connection; done is closed when its reader ends.
type conn struct {
	ws   *websocket.Conn
	done chan struct{}
}

type call struct {
	conn  *conn
	reply chan protocol.Frame
	sub   *Sub // subscribe: bound when the reply arrives
}

// Dial connects to the server. The first connection must succeed, so a
// wrong URL or key fails here; later disconnects are repaired in the
// background until Close.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	u, err := wsURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, wsURL: u, log: cfg.Logger, ready: make(chan struct{}), pending: map[string]*call{}, subs: map[string]*Sub{}}
	c.ctx, c.stop = context.WithCancel(context.WithoutCancel(ctx))
	ws, err := c.dial(ctx)
	if err != nil {
		c.stop()
		return nil, err
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.run(ws) }()
	return c, nil
}

// wsURL turns a base URL into the socket's URL.
func wsURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("client: server URL %q must look like http://127.0.0.1:8080", base)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("client: server URL %q must start with http://, https://, ws:// or wss://", base)
	}
	u.Path += "/agentik/ws"
	// Packed messages: a resume's replay comes in a few messages, each
	// holding several frames, one per line (docs/PROTOCOL.md).
	u.RawQuery = "pack=1"
	return u.String(), nil
}

func (c *Client) dial(ctx context.Context) (*websocket.Conn, error) {
	h := http.Header{}
	if c.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, c.wsURL, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.cfg.HTTPClient})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &DialError{Status: resp.StatusCode, Err: err}
		}
		return nil, fmt.Errorf("client: connect to %s: %w", c.wsURL, err)
	}
	ws.SetReadLimit(readLimit)
	return ws, nil
}

// DialError is a connection attempt the server answered with an HTTP
// status instead of a WebSocket (401 without a valid key, 403 for a
// foreign Host or Origin, 503 while it shuts down).
type DialError struct {
	Status int
	Err    error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("client: the server answered %d %s instead of a WebSocket", e.Status, http.StatusText(e.Status))
}

func (e *DialError) Unwrap() error { return e.Err }

// permanent reports whether reconnecting cannot help.
func permanent(err error) bool {
	var de *DialError
	if errors.As(err, &de) {
		return de.Status == http.StatusUnauthorized || de.Status == http.StatusForbidden || de.Status == http.StatusNotFound
	}
	return websocket.CloseStatus(err) == websocket.StatusPolicyViolation
}

// run owns the connection: it reads until the connection breaks, then
// reconnects with backoff, until Close or a permanent failure.
func (c *Client) run(ws *websocket.Conn) {
	for {
		cn := &conn{ws: ws, done: make(chan struct{})}
		c.mu.Lock()
		c.cur = cn
		close(c.ready)
		c.mu.Unlock()
		err := c.read(cn)
		_ = ws.CloseNow()
		c.lost(cn)
		if c.ctx.Err() != nil {
			c.fail(ErrClosed)
			return
		}
		if permanent(err) {
			c.fail(fmt.Errorf("client: %w", err))
			return
		}
		c.log.Info("client_disconnected", "err", err)
		backoff := minBackoff
		for {
			select {
			case <-c.ctx.Done():
				c.fail(ErrClosed)
				return
			case <-time.After(backoff/2 + rand.N(backoff/2+1)):
			}
			ws, err = c.dial(c.ctx)
			if err == nil {
				c.log.Info("client_reconnected")
				break
			}
			if permanent(err) {
				c.fail(err)
				return
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
		}
	}
}

// lost forgets a broken connection: its pending commands fail and its
// subscriptions resume on the next one.
func (c *Client) lost(cn *conn) {
	c.mu.Lock()
	c.cur = nil
	c.ready = make(chan struct{})
	for id, p := range c.pending {
		if p.conn == cn {
			delete(c.pending, id)
		}
	}
	subs := c.subs
	c.subs = map[string]*Sub{}
	c.mu.Unlock()
	close(cn.done)
	for _, s := range subs {
		s.markStale()
	}
}

// fail ends the client for good.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	close(c.ready) // wake waiters; they see err
	c.mu.Unlock()
}

// read handles the frames of one connection until it breaks.
func (c *Client) read(cn *conn) error {
	// Not c.ctx: Close ends the connection with a close handshake, which
	// this loop must read.
	ctx := context.WithoutCancel(c.ctx)
	for {
		_, m, err := cn.ws.Read(ctx)
		if err != nil {
			return err
		}
		// A packed message (?pack=1) holds several frames, one per line;
		// JSON frames hold no raw newline, so any other is one frame.
		for b := range bytes.SplitSeq(m, []byte{'\n'}) {
			c.frame(b)
		}
	}
}

// frame handles one frame of a message.
func (c *Client) frame(b []byte) {
	var f protocol.Frame
	if err := json.Unmarshal(b, &f); err != nil {
		c.log.Warn("client_bad_frame", "err", err)
		return
	}
	switch f.Type {
	case protocol.FrameReply:
		c.replied(f)
	case protocol.FrameEvent:
		c.mu.Lock()
		s := c.subs[f.Sub]
		c.mu.Unlock()
		if s == nil {
			return
		}
		var ev agent.AllEvent
		if err := json.Unmarshal(f.Event, &ev); err != nil {
			c.log.Warn("client_bad_event", "err", err)
			return
		}
		if !s.push(Event{AllEvent: ev, JSON: f.Event}) {
			c.unbind(f.Sub, s)
		}
	case protocol.FrameResync:
		c.mu.Lock()
		s := c.subs[f.Sub]
		c.mu.Unlock()
		if s != nil {
			c.unbind(f.Sub, s)
			s.resync(f.Reason, f.After)
		}
	}
}

func (c *Client) unbind(id string, s *Sub) {
	c.mu.Lock()
	if c.subs[id] == s {
		delete(c.subs, id)
	}
	c.mu.Unlock()
}

func (c *Client) replied(f protocol.Frame) {
	if f.ID == nil {
		c.log.Warn("client_uncorrelated_error", "error", f.Error)
		return
	}
	c.mu.Lock()
	p := c.pending[*f.ID]
	delete(c.pending, *f.ID)
	if p != nil && p.sub != nil && f.OK {
		// Bind before the next frame is read: the subscription's events
		// follow its reply at once.
		var r protocol.SubscribeResult
		if err := json.Unmarshal(f.Result, &r); err == nil {
			c.subs[r.Sub] = p.sub
			p.sub.bound(r)
		}
	}
	c.mu.Unlock()
	if p != nil {
		p.reply <- f
	}
}

// conn waits for a connection.
func (c *Client) conn(ctx context.Context) (*conn, error) {
	for {
		c.mu.Lock()
		cn, ready, err := c.cur, c.ready, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if cn != nil {
			return cn, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Call runs one command and decodes its result into out (when not nil).
// A failed command returns its *agent.Error; a broken connection returns
// ErrDisconnected.
func (c *Client) Call(ctx context.Context, cmd protocol.Command, out any) error {
	return c.call(ctx, cmd, out, nil)
}

func (c *Client) call(ctx context.Context, cmd protocol.Command, out any, sub *Sub) error {
	cn, err := c.conn(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.cur != cn {
		c.mu.Unlock()
		return ErrDisconnected
	}
	c.nextID++
	cmd.ID = "c" + strconv.Itoa(c.nextID)
	p := &call{conn: cn, reply: make(chan protocol.Frame, 1), sub: sub}
	c.pending[cmd.ID] = p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, cmd.ID)
		c.mu.Unlock()
	}()
	b, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("client: encode %s: %w", cmd.Op, err)
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err = cn.ws.Write(wctx, websocket.MessageText, b)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return ErrDisconnected
	}
	select {
	case f := <-p.reply:
		if !f.OK {
			if f.Error == nil {
				return agent.Errorf(agent.CodeInternal, "%s failed without an error", cmd.Op)
			}
			return f.Error
		}
		if out != nil {
			if err := json.Unmarshal(f.Result, out); err != nil {
				return fmt.Errorf("client: decode %s result: %w", cmd.Op, err)
			}
		}
		return nil
	case <-cn.done:
		return ErrDisconnected
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retry runs a command that is safe to repeat until it gets a reply,
// across reconnects.
func (c *Client) retry(ctx context.Context, cmd protocol.Command, out any) error {
	for {
		err := c.call(ctx, cmd, out, nil)
		if !errors.Is(err, ErrDisconnected) {
			return err
		}
	}
}

// Close ends the connection and every subscription.
func (c *Client) Close() error {
	c.stop()
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	if cn != nil {
		_ = cn.ws.Close(websocket.StatusNormalClosure, "")
	}
	c.wg.Wait()
	return nil
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.retry(ctx, protocol.Command{Op: protocol.OpPing}, nil)
}

// CreateConversation makes a conversation; a temp one is never stored.
func (c *Client) CreateConversation(ctx context.Context, title string, temp bool) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.call(ctx, protocol.Command{Op: protocol.OpCreateConversation, Title: &title, Temp: temp}, &out, nil)
	return out, err
}

// Conversation returns one conversation.
func (c *Client) Conversation(ctx context.Context, id string) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.retry(ctx, protocol.Command{Op: protocol.OpGetConversation, ConversationID: id}, &out)
	return out, err
}

// Conversations returns a page of conversations, most recent first.
func (c *Client) Conversations(ctx context.Context, offset, limit int) (protocol.ListResult, error) {
	var out protocol.ListResult
	err := c.retry(ctx, protocol.Command{Op: protocol.OpListConversations, Offset: &offset, Limit: &limit}, &out)
	return out, err
}

// Messages returns a page of a conversation's history.
func (c *Client) Messages(ctx context.Context, q agent.MessageQuery) ([]agent.Message, error) {
	p, err := c.History(ctx, q)
	return p.Messages, err
}

// History returns a page of a conversation's history and where the next
// starts: the server ends a page early at its byte bound.
func (c *Client) History(ctx context.Context, q agent.MessageQuery) (agent.HistoryPage, error) {
	var out protocol.MessagesResult
	cmd := protocol.Command{Op: protocol.OpGetMessages, ConversationID: q.ConversationID, After: &q.After, Offset: &q.Offset, Limit: &q.Limit}
	if q.Limit == 0 {
		cmd.Limit = nil
	}
	if q.End > 0 {
		cmd.End, cmd.Offset = &q.End, nil
	}
	if q.All {
		cmd.Branch = "all"
	}
	err := c.retry(ctx, cmd, &out)
	return agent.HistoryPage{Messages: out.Messages, NextOffset: out.NextOffset, NextEnd: out.NextEnd}, err
}

// Send sends a user message and starts a turn. With a clientID the send
// is idempotent and retried across reconnects; without one it is not.
func (c *Client) Send(ctx context.Context, conversationID string, content []agent.Content, clientID string) (protocol.SendResult, error) {
	var out protocol.SendResult
	cmd := protocol.Command{Op: protocol.OpSend, ConversationID: conversationID, Content: content, ClientID: clientID}
	var err error
	if clientID != "" {
		err = c.retry(ctx, cmd, &out)
	} else {
		err = c.call(ctx, cmd, &out, nil)
	}
	return out, err
}

// Interrupt stops the conversation's running turn; it reports whether one
// was running.
func (c *Client) Interrupt(ctx context.Context, conversationID string) (bool, error) {
	var out protocol.InterruptResult
	err := c.retry(ctx, protocol.Command{Op: protocol.OpInterrupt, ConversationID: conversationID}, &out)
	return out.Interrupted, err
}

// Rename changes a conversation's title.
func (c *Client) Rename(ctx context.Context, conversationID, title string) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.retry(ctx, protocol.Command{Op: protocol.OpRename, ConversationID: conversationID, Title: &title}, &out)
	return out, err
}

// Delete deletes a conversation with its history.
func (c *Client) Delete(ctx context.Context, conversationID string) error {
	return c.call(ctx, protocol.Command{Op: protocol.OpDelete, ConversationID: conversationID}, nil, nil)
}

// Tools returns the state of the server's tool servers.
func (c *Client) Tools(ctx context.Context) (protocol.ToolsResult, error) {
	var out protocol.ToolsResult
	err := c.retry(ctx, protocol.Command{Op: protocol.OpListTools}, &out)
	return out, err
}
