package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// Limits of a WebSocket connection; docs/PROTOCOL.md lists them for
// clients.
const (
	// WSReadLimit caps one client frame: a send with a 10 MB image,
	// base64-encoded, fits. A bigger frame closes the connection with 1009.
	WSReadLimit = protocol.MaxBodyBytes
	// WSMaxSubscriptions caps the subscriptions of one connection.
	WSMaxSubscriptions = 64
	// WSCommandRate and WSCommandBurst rate-limit the commands of one
	// connection (a token bucket); a command over the limit gets a
	// rate_limited reply and is not run.
	WSCommandRate  = 50 // per second
	WSCommandBurst = 100
	// WSRateStrikes rate-limited commands within WSStrikeWindow close the
	// connection with 1008 (policy violation). The window starts at the
	// first strike; when it has passed, the count starts again.
	WSRateStrikes  = 200
	WSStrikeWindow = 10 * time.Second
	// WSWriteTimeout bounds every write; a client that does not read for
	// this long is disconnected.
	WSWriteTimeout = 10 * time.Second
	// WSPingInterval is how often the server pings; a pong must come back
	// within WSPongTimeout or the connection is closed.
	WSPingInterval = 30 * time.Second
	WSPongTimeout  = 15 * time.Second
	// WSCommandTimeout bounds the work of one command.
	WSCommandTimeout = 30 * time.Second
)

// Internal sizes of a connection.
const (
	// wsOutQueue is how many replies may wait for the connection's writer.
	// Small on purpose: idle connections must stay cheap, and events wait
	// in the broker's per-subscription queue (broker.QueueLimit) instead.
	wsOutQueue = 16
	// wsStallTimeout is how long one write to the network may block before
	// the connection's subscriptions end with resync slow_consumer: their
	// events stop piling up in the broker, and the client resumes from the
	// cursor once it reads again.
	wsStallTimeout = 2 * time.Second
)

// wsConn is one WebSocket connection: its goroutine reads (serveConn), a
// short-lived drain goroutine runs commands in order, and one writer
// goroutine owns every write. The writer also serves every subscription:
// it turns their broker items into frames itself, so an event reaches the
// socket without a hop between goroutines. The writer runs only while
// there is something to write (kick starts it, it ends when it finds
// nothing), so an idle subscribed connection has one goroutine, the
// reader; pings come from a timer, shutdown from the streams' context.
type wsConn struct {
	s      *Server
	c      *websocket.Conn
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	out    chan wsOut    // replies for the writer, which owns each from then on
	done   chan struct{} // closed when the writer has stopped for good
	wg     sync.WaitGroup
	limit  CommandLimiter
	ends   []func()   // the upgrade request's end work, done when the connection ends (handleWS)
	batch  *batchConn // the connection, which may hold frames for one write
	pack   bool       // ?pack=1: a message may carry several frames, one per line

	pinging atomic.Bool // a ping waits for its pong

	// The writer of the moment, if any (kick); wmu guards these.
	wmu      sync.Mutex
	writing  bool        // a writer runs
	wstop    bool        // no writer starts again: it failed, or the connection ends
	woken    bool        // a subscription may have items (its broker wake), for the writer to see
	shutdown bool        // the server shuts down: the writer closes with 1012
	ping     *time.Timer // the next ping (pingDue)
	unwatch  func() bool // stops the shutdown watch (kickShutdown)

	// owned by the reader
	strikes     int
	strikeStart time.Time // when the current strike window began

	// Commands wait in queue for the one drain goroutine that runs them
	// in order (started when the queue fills from empty, gone when it
	// empties), so the reader never waits for a command.
	qmu      sync.Mutex
	queue    []wsCommand
	draining bool

	nextSub int // owned by the drain goroutine of the moment

	mu   sync.Mutex
	subs map[string]*wsSub

	// owned by the writer of the moment
	live     []*wsSub // the subscriptions it serves, in the order they began
	maybe    bool     // a subscription may have items
	turnNext int      // where the next pass over live starts
}

// wsOut is what the writer is handed: a frame, and the subscription whose
// reply it is, which the writer serves from then on (so the reply precedes
// every frame of it).
type wsOut struct {
	b     []byte
	start *wsSub
}

// wsSub is one subscription of a connection.
type wsSub struct {
	id  string
	sub *broker.Sub
	// closed: unsubscribed or the connection ends (no resync follows);
	// stalled: ended by a stalled write (a resync slow_consumer follows).
	closed, stalled atomic.Bool
	last            int64 // owned by the writer: the seq the client has everything through
}

// wsPath is the WebSocket's route.
const wsPath = "/agentik/ws"

// handleWS upgrades the request and hands the connection to a goroutine
// of its own (serveConn), then returns (handover.go): an idle connection
// holds no net/http goroutine, response or request.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !s.streams.Hold() {
		s.writeError(w, r, errShuttingDown)
		return
	}
	ends := []func(){s.streams.Release}
	// Loopback is this machine, or a reverse proxy that is not in
	// TrustedProxies: capping it would cap every user behind it together.
	if client := s.clientAddr(r); !client.IsLoopback() {
		if !s.wsConns.acquire(client) {
			s.streams.Release()
			s.writeError(w, r, agent.Errorf(agent.CodeRateLimited, "this address already holds %d WebSocket connections; close one first", s.cfg.WSConnsPerClient))
			return
		}
		ends = append(ends, func() { s.wsConns.release(client) })
	}
	k := s.acceptWS(w, r)
	if k == nil {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i]()
		}
		return
	}
	// When the connection ends: what the deferred calls here did, then
	// what the middleware would have done on return.
	slices.Reverse(ends)
	k.ends = append(ends, handOver(w)...)
	go k.serveConn()
}

// acceptWS upgrades the request; nil when it has been answered otherwise.
func (s *Server) acceptWS(w http.ResponseWriter, r *http.Request) *wsConn {
	pack, err := packParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return nil
	}
	bw := &batchWriter{ResponseWriter: w}
	c, err := websocket.Accept(bw, r, &websocket.AcceptOptions{OriginPatterns: s.originPatterns()})
	if err != nil {
		// Accept has answered (403 for a foreign Origin, 400 for a bad
		// handshake).
		s.log.Debug("ws_accept_failed", "err", err)
		return nil
	}
	c.SetReadLimit(WSReadLimit)
	// A user disabled (or their key revoked) meanwhile: closed with 1008
	// (people.go), not cut, the reason saying why ("<reason>: <words>",
	// auth.go signedOut), which the UI's sign-in page says again.
	onRevoke(r.Context(), func(why string) {
		_ = c.Close(websocket.StatusPolicyViolation, why+": "+web.SignedOut(why))
	})

	// The connection outlives the request, whose context net/http cancels
	// when handleWS returns: its values (the principal, the key's hold),
	// not its cancellation.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	if bw.conn != nil {
		bw.conn.timeout = cmp.Or(s.cfg.WSWriteTimeout, WSWriteTimeout)
	}
	k := &wsConn{
		s: s, c: c, ctx: ctx, cancel: cancel, batch: bw.conn, pack: pack,
		out:   make(chan wsOut, wsOutQueue),
		done:  make(chan struct{}),
		limit: s.newLimiter(),
	}
	if bw.conn != nil {
		bw.conn.onStall, bw.conn.stallAfter = k.stalled, cmp.Or(s.cfg.WSStallTimeout, wsStallTimeout)
		// A write blocked when the connection ends fails at once.
		context.AfterFunc(ctx, bw.conn.expire)
	}
	k.wmu.Lock()
	k.ping = time.AfterFunc(WSPingInterval, k.pingDue)
	k.unwatch = context.AfterFunc(s.streams.Context(), k.kickShutdown)
	k.wmu.Unlock()
	return k
}

// serveConn runs the connection until it ends, on a goroutine of its own
// that reads (see readLoop), then does the request's end work (k.ends).
func (k *wsConn) serveConn() {
	k.ended(k.readLoop())
	for _, f := range k.ends {
		f()
	}
}

// kick starts a writer unless one runs (or none may any more); it never
// waits, so the broker may call it (as a subscription's wake).
func (k *wsConn) kick() {
	k.wmu.Lock()
	k.startLocked()
	k.wmu.Unlock()
}

// wake is every subscription's broker wake: one may have items.
func (k *wsConn) wake() {
	k.wmu.Lock()
	k.woken = true
	k.startLocked()
	k.wmu.Unlock()
}

// kickShutdown has the writer close the connection with 1012.
func (k *wsConn) kickShutdown() {
	k.wmu.Lock()
	k.shutdown = true
	k.startLocked()
	k.wmu.Unlock()
}

func (k *wsConn) startLocked() {
	if k.writing || k.wstop {
		return
	}
	k.writing = true
	k.wg.Add(1) // under wmu: before ended's Wait, or not at all (wstop)
	go k.writer()
}

// writer runs writeLoop; when that stops for good it ends the connection.
func (k *wsConn) writer() {
	defer k.wg.Done()
	if k.writeLoop() {
		return // nothing left to write
	}
	k.wmu.Lock()
	k.wstop = true
	k.wmu.Unlock()
	close(k.done)
	k.cancel()
}

// pingDue pings (once the last ping's pong came) and sets the next one.
func (k *wsConn) pingDue() {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	if k.wstop {
		return
	}
	if k.pinging.CompareAndSwap(false, true) {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			defer k.pinging.Store(false)
			ctx, cancel := context.WithTimeout(k.ctx, cmp.Or(k.s.cfg.WSPongTimeout, WSPongTimeout))
			defer cancel()
			if err := k.c.Ping(ctx); err != nil && k.ctx.Err() == nil {
				k.s.log.Debug("ws_ping_failed", "err", err)
				_ = k.c.CloseNow()
			}
		}()
	}
	k.ping.Reset(WSPingInterval)
}

// ended cleans up once the reader has stopped with err.
//
//go:noinline
func (k *wsConn) ended(err error) {
	k.cancel()
	k.wmu.Lock()
	k.wstop = true // no writer or ping starts from here on
	k.ping.Stop()
	k.unwatch()
	k.wmu.Unlock()
	k.wg.Wait() // the writer, a ping, and a command that may add a subscription
	k.mu.Lock()
	for _, ws := range k.subs {
		ws.closed.Store(true)
		ws.sub.Close()
	}
	k.subs = nil
	k.mu.Unlock()
	_ = k.c.CloseNow()
	switch st := websocket.CloseStatus(err); {
	case st == websocket.StatusNormalClosure || st == websocket.StatusGoingAway || st == websocket.StatusServiceRestart:
		k.s.log.Debug("ws_closed", "status", int(st))
	default:
		k.s.log.Debug("ws_closed", "err", err)
	}
}

// readLoop reads and runs commands until the connection fails or closes.
//
// The loop itself keeps a small frame (what each message needs is in
// received's): an idle connection's reader waits here, and the less of its
// stack it uses there, the smaller the stack the garbage collector can
// shrink it to (the idle memory budget).
//
// Its reads take no context: whatever ends the connection closes it, which
// ends a read (a context would cost an AfterFunc per message, and one
// held by every idle connection).
func (k *wsConn) readLoop() error {
	for {
		typ, b, err := k.c.Read(context.Background())
		if err != nil {
			return err
		}
		if err := k.received(typ, b); err != nil {
			return err
		}
	}
}

// received handles one client message; an error ends the connection.
//
//go:noinline
func (k *wsConn) received(typ websocket.MessageType, b []byte) error {
	if !k.limit.Allow() {
		if k.strike() {
			_ = k.c.Close(websocket.StatusPolicyViolation, "command rate limit exceeded")
			return errors.New("ws: rate limit strikes")
		}
		_, id, _ := protocol.Decode(b)
		k.reply(id, "", nil, agent.Errorf(agent.CodeRateLimited, "more than %d commands per second; slow down", WSCommandRate))
		return nil
	}
	if typ != websocket.MessageText {
		k.reply(nil, "", nil, agent.Errorf(agent.CodeBadRequest, "binary frames are not accepted; send commands as JSON text frames"))
		return nil
	}
	cmd, id, err := protocol.Decode(b)
	if err == nil && cmd.Op == protocol.OpPing {
		// Answered at once, ahead of commands still running: a ping
		// says the connection is alive, whatever a command waits for.
		k.reply(id, cmd.Op, protocol.Empty{}, nil)
		return nil
	}
	k.push(wsCommand{cmd: cmd, id: id, err: err})
	return nil
}

// wsCommandQueue is how many commands may wait on one connection for the
// one before them; past it a command gets rate_limited at once.
const wsCommandQueue = 32

// wsCommand is one decoded command (or its decoding error) waiting to run.
type wsCommand struct {
	cmd protocol.Command
	id  *string
	err error
}

// push queues c for the drain goroutine, starting one when none runs.
// Commands run on that short-lived goroutine, never the reader: the
// reader goes on reading (pongs, pings, the next commands) while a command
// waits for a model or the database, and the drain's stack is freed when
// the queue empties instead of staying with the long-lived reader (the
// idle connection memory budget).
func (k *wsConn) push(c wsCommand) {
	k.qmu.Lock()
	if len(k.queue) >= wsCommandQueue {
		k.qmu.Unlock()
		k.reply(c.id, c.cmd.Op, nil, agent.Errorf(agent.CodeRateLimited, "%d commands already wait on this connection for the one running; wait for their replies", wsCommandQueue))
		return
	}
	k.queue = append(k.queue, c)
	start := !k.draining
	k.draining = true
	k.qmu.Unlock()
	if start {
		k.wg.Add(1)
		go k.drain()
	}
}

// drain runs queued commands in order until the queue is empty.
func (k *wsConn) drain() {
	defer k.wg.Done()
	for {
		k.qmu.Lock()
		if len(k.queue) == 0 {
			k.draining = false
			k.queue = nil
			k.qmu.Unlock()
			return
		}
		c := k.queue[0]
		k.queue[0] = wsCommand{}
		k.queue = k.queue[1:]
		k.qmu.Unlock()
		k.command(c)
	}
}

// strike counts one rate-limited command and reports whether the
// connection has had WSRateStrikes of them within WSStrikeWindow. Counting
// per window, not in a row, makes the close independent of how fast the
// machine reads: a flood is closed even when a refill lets one command
// through now and then.
func (k *wsConn) strike() bool {
	now := k.s.now()
	if k.strikes == 0 || now.Sub(k.strikeStart) >= WSStrikeWindow {
		k.strikes, k.strikeStart = 0, now
	}
	k.strikes++
	return k.strikes >= WSRateStrikes
}

// CommandLimiter decides whether a connection's next command may run; a
// *rate.Limiter is one. Config.NewCommandLimiter makes one per connection.
type CommandLimiter interface {
	Allow() bool
}

func (s *Server) newLimiter() CommandLimiter {
	if s.cfg.NewCommandLimiter != nil {
		return s.cfg.NewCommandLimiter()
	}
	return rate.NewLimiter(WSCommandRate, WSCommandBurst)
}

func (s *Server) now() time.Time {
	if s.cfg.Clock != nil {
		return s.cfg.Clock()
	}
	return time.Now()
}

// command runs one decoded command under the command timeout and queues
// its reply; one that ran out of time fails saying so.
func (k *wsConn) command(c wsCommand) {
	cmd, id := c.cmd, c.id
	if c.err != nil {
		k.reply(id, "", nil, c.err)
		return
	}
	limit := cmp.Or(k.s.cfg.WSCommandTimeout, WSCommandTimeout)
	ctx, cancel := context.WithTimeout(k.ctx, limit)
	defer cancel()
	if cmd.Op == protocol.OpSubscribe {
		k.subscribe(ctx, cmd, id)
		return
	}
	res, err := k.run(ctx, cmd)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && k.ctx.Err() == nil {
		err = agent.Errorf(agent.CodeUnavailable, "%s took longer than %s, the most one command may take, and was stopped", cmd.Op, limit)
	}
	k.reply(id, cmd.Op, res, err)
}

// run runs every command but subscribe and returns its result: unsubscribe
// here, every other op through the op table (op.go).
func (k *wsConn) run(ctx context.Context, cmd protocol.Command) (any, error) {
	switch cmd.Op {
	case protocol.OpUnsubscribe:
		k.mu.Lock()
		ws := k.subs[cmd.Sub]
		delete(k.subs, cmd.Sub)
		k.mu.Unlock()
		if ws == nil {
			return nil, agent.Errorf(agent.CodeNotFound, "no subscription %q on this connection", agent.Shorten(cmd.Sub, 40))
		}
		// The writer serves no frame of it once it has seen this, and it
		// sees it before the reply: no frame of it follows the reply.
		ws.closed.Store(true)
		ws.sub.Close()
		return protocol.Empty{}, nil
	case protocol.OpPing: // answered by the reader; kept for completeness
		return protocol.Empty{}, nil
	}
	return k.s.tableOp(ctx, cmd)
}

// subscribe starts a subscription: the writer serves it once it has
// written the reply, so the reply precedes the subscription's first frame.
func (k *wsConn) subscribe(ctx context.Context, cmd protocol.Command, id *string) {
	k.mu.Lock()
	n := len(k.subs)
	k.mu.Unlock()
	if n >= WSMaxSubscriptions {
		k.reply(id, cmd.Op, nil, agent.Errorf(agent.CodeRateLimited, "a connection may hold at most %d subscriptions; unsubscribe first", WSMaxSubscriptions))
		return
	}
	stream := broker.Stream{Kind: cmd.Stream, ConversationID: cmd.ConversationID}
	if stream.Kind == broker.StreamConversation {
		if _, err := k.s.convs.Get(ctx, cmd.ConversationID); err != nil {
			k.reply(id, cmd.Op, nil, err)
			return
		}
	}
	after := int64(-1)
	if cmd.After != nil {
		after = *cmd.After
	}
	k.nextSub++
	subID := "s" + strconv.Itoa(k.nextSub)
	sctx := ctx
	if cmd.Mine { // an admin's sidebar: her own conversations' events
		sctx = agent.OwnedBy(ctx, agent.PrincipalFrom(ctx).UserID)
	}
	sub, err := k.s.broker.SubscribeWake(sctx, stream, after, cmd.Epoch, k.wake)
	var re *broker.ResyncError
	if errors.As(err, &re) {
		// The cursor cannot be resumed: the subscription starts and ends at
		// once, and the client reloads history.
		_, head, err := k.s.store.Bounds(ctx)
		if err != nil {
			k.reply(id, cmd.Op, nil, err)
			return
		}
		k.reply(id, cmd.Op, protocol.SubscribeResult{Sub: subID, Epoch: k.s.store.Epoch(), Head: head}, nil)
		k.enqueue(k.ctx, wsOut{b: resyncFrame(subID, re.After, re.Reason, re.Start)})
		return
	}
	if err != nil {
		k.reply(id, cmd.Op, nil, err)
		return
	}
	ws := &wsSub{id: subID, sub: sub, last: after}
	if after < 0 {
		ws.last = sub.Head
	}
	k.mu.Lock()
	if k.subs == nil {
		k.subs = map[string]*wsSub{}
	}
	k.subs[subID] = ws
	k.mu.Unlock()
	k.replyStart(id, cmd.Op, protocol.SubscribeResult{Sub: subID, Epoch: k.s.store.Epoch(), Head: sub.Head}, nil, ws)
}

// stalled ends every subscription of the connection with resync
// slow_consumer: a write has been blocked for wsStallTimeout (the
// batchConn's timer calls it, while the writer waits in that write). The
// writer sends each resync, with the seq it has written through, once the
// client reads again.
func (k *wsConn) stalled() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ws := range k.subs {
		if !ws.closed.Load() {
			ws.stalled.Store(true)
			ws.sub.Close()
		}
	}
}

// serve gives each live subscription one turn: its ready items, as one
// packed message or (unpacked) as one message each, up to wsBatchBytes.
// It reports whether any had items (then another pass may find more) and
// whether the connection is still good.
func (k *wsConn) serve() (progressed, ok bool) {
	n := len(k.live)
	for i := 0; i < n && len(k.live) > 0; i++ {
		j := (k.turnNext + i) % len(k.live)
		ws := k.live[j]
		sent, ended, ok := k.turn(ws)
		if !ok {
			return false, false
		}
		if ended {
			k.live = append(k.live[:j], k.live[j+1:]...)
			i--
			n--
			continue
		}
		progressed = progressed || sent
	}
	if len(k.live) > 0 {
		k.turnNext = (k.turnNext + 1) % len(k.live)
	}
	return progressed, true
}

// turn writes what one subscription has ready. ended says it is over (its
// resync, if any, written).
func (k *wsConn) turn(ws *wsSub) (sent, ended, ok bool) {
	if ws.closed.Load() {
		return false, true, true
	}
	size := 0
	for n := 0; n < wsPackFrames && size < wsBatchBytes; n++ {
		it, got, err := ws.sub.TryNext(k.ctx)
		if err != nil {
			return sent, true, k.subFailed(ws, err)
		}
		if !got {
			return sent, false, true
		}
		b := appendItemFrame(getFrameBuf(), ws.id, it)
		top := itemSeq(it)
		if k.pack {
			// What else is ready goes in the same message: a resume's
			// replay becomes a few messages instead of one per event.
			b, top, err = k.packMore(k.ctx, ws, b, top)
		}
		if !k.write(b) {
			return sent, true, false
		}
		putFrameBuf(b) // written: coder/websocket has copied it
		sent = true
		size += len(b)
		ws.last = max(ws.last, top)
		if err != nil {
			return sent, true, k.subFailed(ws, err)
		}
		if k.pack {
			return sent, false, true // one message per turn
		}
	}
	return sent, false, true
}

// wsPackFrames bounds the frames of one packed message.
const wsPackFrames = 256

// frameBufs holds the small buffers a subscription's frames are built in
// (an event's, or the first of a packed message): the writer takes one per
// frame and returns it once written, instead of allocating each frame (a
// replay of 100k events was 100k allocations of its size). Connections
// hold none between writes.
var frameBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// frameBufMax is the largest frame buffer kept for reuse.
const frameBufMax = 16 << 10

func getFrameBuf() []byte { return (*frameBufs.Get().(*[]byte))[:0] }

// putFrameBuf takes back a buffer of getFrameBuf or getPackBuf once its
// message is written.
func putFrameBuf(b []byte) {
	switch c := cap(b); {
	case c == packBufCap:
		putPackBuf(b)
	case c > 0 && c <= frameBufMax:
		b = b[:0]
		frameBufs.Put(&b)
	}
}

// packBufs holds the buffers packed messages of more than one frame are
// built in, each of packBufCap bytes: a resume's message grew by doubling,
// which was a third of the server's CPU in a reconnect storm (copies, and
// the garbage collector's assists). The writer returns a buffer once its
// message is written. A message of one frame (a live event) keeps its own
// small buffer, so a thousand connections streaming hold no pooled ones.
var packBufs = sync.Pool{New: func() any { b := make([]byte, 0, packBufCap); return &b }}

// packBufCap holds a message of wsBatchBytes and the frame that ends it.
const packBufCap = wsBatchBytes + 8<<10

func getPackBuf() []byte { return (*packBufs.Get().(*[]byte))[:0] }

// putPackBuf takes back b if it is one of packBufs' (a message that
// outgrew it was copied elsewhere by append).
func putPackBuf(b []byte) {
	if cap(b) == packBufCap {
		b = b[:0]
		packBufs.Put(&b)
	}
}

// packMore appends to b, one per line, the subscription's items that are
// ready now, up to wsBatchBytes and wsPackFrames. It returns the message,
// the highest seq in it and the error that stopped it, if any: the frames
// packed before it are sent first.
func (k *wsConn) packMore(ctx context.Context, ws *wsSub, b []byte, top int64) ([]byte, int64, error) {
	for n := 1; n < wsPackFrames && len(b) < wsBatchBytes; n++ {
		it, ok, err := ws.sub.TryNext(ctx)
		if err != nil || !ok {
			return b, top, err
		}
		if cap(b) != packBufCap {
			// A second frame: from here on the message is built in a
			// buffer of full size (a lone live event stays in its small
			// one).
			nb := append(getPackBuf(), b...)
			putFrameBuf(b)
			b = nb
		}
		b = appendItemFrame(append(b, '\n'), ws.id, it)
		top = max(top, itemSeq(it))
	}
	return b, top, nil
}

// appendItemFrame appends the frame of a subscription's item.
func appendItemFrame(b []byte, sub string, it broker.Item) []byte {
	if it.CaughtUp {
		return appendCaughtUpFrame(b, sub, it.Seq)
	}
	return appendEventFrame(b, sub, it.Event.JSON) // the bytes the event was stored as
}

// itemSeq is the seq an item brings the client to (0 for caught_up and
// events never stored).
func itemSeq(it broker.Item) int64 {
	if it.CaughtUp {
		return 0
	}
	return it.Event.Seq
}

// subFailed ends a subscription whose broker side failed or was closed,
// writing its resync unless it was unsubscribed; it reports whether the
// connection is still good.
func (k *wsConn) subFailed(ws *wsSub, err error) bool {
	if ws.closed.Load() || k.ctx.Err() != nil {
		return true
	}
	reason := protocol.ResyncReasonError
	var re *broker.ResyncError
	switch {
	case ws.stalled.Load():
		reason = broker.ReasonSlowConsumer
	case errors.As(err, &re):
		reason = re.Reason
	default:
		k.s.wireError("ws subscription", err) // logs it
	}
	ws.sub.Close()
	k.mu.Lock()
	if k.subs[ws.id] == ws {
		delete(k.subs, ws.id)
	}
	k.mu.Unlock()
	return k.write(resyncFrame(ws.id, ws.last, reason, 0))
}

// packParam reads the upgrade's pack parameter: "1" asks for packed
// messages, "0" or none for one frame per message.
func packParam(r *http.Request) (bool, error) {
	switch r.URL.RawQuery { // the usual queries, without parsing one into a map
	case "":
		return false, nil
	case "pack=1":
		return true, nil
	}
	switch v := r.URL.Query().Get("pack"); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, agent.Errorf(agent.CodeBadRequest, "pack is %q: use pack=1 for several frames per message (one per line), or leave it out", v)
	}
}

// reply queues a reply; err, if any, becomes its Error.
func (k *wsConn) reply(id *string, op string, result any, err error) {
	k.replyStart(id, op, result, err, nil)
}

// replyStart queues a reply, after which the writer serves start (if not
// nil).
func (k *wsConn) replyStart(id *string, op string, result any, err error, start *wsSub) {
	var e *agent.Error
	if err != nil {
		e = k.s.wireError("ws "+op, err)
		result = nil
	}
	b, err := replyFrame(id, result, e)
	if err != nil {
		b, _ = replyFrame(id, nil, k.s.wireError("ws "+op, err))
	}
	if !k.enqueue(k.ctx, wsOut{b: b, start: start}) && start != nil {
		start.sub.Close() // the writer has stopped: the connection ends
	}
}

// enqueue hands a frame to the writer, waiting as long as it takes; it
// reports false when the connection ended first.
func (k *wsConn) enqueue(ctx context.Context, o wsOut) bool {
	select {
	case k.out <- o:
		k.kick()
		return true
	case <-ctx.Done():
	case <-k.done:
	}
	return false
}

// writeLoop owns every write: replies in queue order, each subscription's
// frames (see serve), the 1012 close on shutdown. What it writes while
// more work is at hand waits in the batchConn, and goes out in one write
// when the writer finds nothing more to do. It reports true when it
// stopped for that (a kick starts the next writer), false when the
// connection is done.
func (k *wsConn) writeLoop() (idle bool) {
	for {
		select {
		case o := <-k.out:
			if !k.writeOut(o) {
				return false
			}
			continue
		default:
		}
		if k.maybe {
			progressed, ok := k.serve()
			if !ok {
				return false
			}
			k.maybe = progressed
			if progressed {
				continue
			}
		}
		if !k.flush() {
			return false
		}
		if k.ctx.Err() != nil {
			_ = k.c.CloseNow() // ends the reader too (its reads take no context)
			return false
		}
		k.wmu.Lock()
		switch {
		case k.shutdown:
			k.wmu.Unlock()
			_ = k.c.Close(websocket.StatusServiceRestart, "server restarting; reconnect and resume")
			return false
		case k.woken:
			k.woken, k.maybe = false, true
		case len(k.out) == 0:
			// enqueue sends before it kicks, and a wake sets woken
			// before it kicks: what comes after this finds no writer and
			// starts one.
			k.writing = false
			k.wmu.Unlock()
			return true
		}
		k.wmu.Unlock()
	}
}

// writeOut writes a reply (packed with the replies queued behind it) and
// starts serving the subscription it began.
func (k *wsConn) writeOut(o wsOut) bool {
	for {
		b, rest := o.b, wsOut{}
		if k.pack && o.start == nil {
			// Replies queued behind this one join its message; one that
			// does not fit, or begins a subscription, starts the next.
			b, rest = k.packQueued(b)
		}
		if !k.write(b) {
			if o.start != nil {
				o.start.sub.Close()
			}
			return false
		}
		if k.pack {
			putPackBuf(b) // written: coder/websocket has copied it
		}
		if o.start != nil {
			k.live = append(k.live, o.start)
			k.maybe = true
		}
		if rest.b == nil {
			return true
		}
		o = rest
	}
}

// write sends one message; it may wait in the batchConn until flush. It
// reports whether the connection is still good.
func (k *wsConn) write(b []byte) bool {
	var err error
	if k.batch != nil {
		// The batchConn bounds each write to the network by
		// WSWriteTimeout, and fails it at once when the connection ends
		// (acceptWS): no deadline per frame.
		k.batch.holdNext(true)
		err = k.c.Write(context.Background(), websocket.MessageText, b)
	} else {
		ctx, cancel := context.WithTimeout(k.ctx, cmp.Or(k.s.cfg.WSWriteTimeout, WSWriteTimeout))
		err = k.c.Write(ctx, websocket.MessageText, b)
		cancel()
	}
	if err != nil {
		_ = k.c.CloseNow()
		return false
	}
	return true
}

// flush sends what the batchConn holds; it reports whether the connection
// is still good.
func (k *wsConn) flush() bool {
	if k.batch == nil {
		return true
	}
	if err := k.batch.flush(); err != nil {
		_ = k.c.CloseNow()
		return false
	}
	return true
}

// packQueued joins to b, one per line, the replies queued behind it while
// the message stays within wsBatchBytes. It returns the message and the
// reply that did not fit or begins a subscription, which starts the next
// one.
func (k *wsConn) packQueued(b []byte) ([]byte, wsOut) {
	for len(b) < wsBatchBytes {
		select {
		case o := <-k.out:
			if o.start != nil || len(b)+1+len(o.b) > wsBatchBytes {
				return b, o
			}
			if cap(b) != packBufCap {
				b = append(getPackBuf(), b...)
			}
			b = append(append(b, '\n'), o.b...)
			putPackBuf(o.b)
		default:
			return b, wsOut{}
		}
	}
	return b, wsOut{}
}
