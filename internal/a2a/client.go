package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// The client side: agentik's agents delegate to agents of other runtimes
// over A2A (the same v1.0 JSON-RPC binding the server speaks). Remotes
// implements agent.Remote: a delegation's child turn sends its message as
// a streaming send, passes the artifact's text on as it streams, and when
// the stream drops before the task settles, resubscribes to the task
// (SubscribeToTask: its snapshot, then the later updates) and passes on
// only what it had not yet seen.

// DefaultResubscribes is how many times in a row a dropped stream is
// resubscribed before the delegation fails.
const DefaultResubscribes = 5

// cardTimeout bounds fetching a remote agent's card, and cancelling its
// task when the delegation is interrupted.
const cardTimeout = 10 * time.Second

// RemoteAgent is a remote A2A agent that agentik's agents may delegate to.
type RemoteAgent struct {
	// URL is where its card is: the agent's base URL (the card is at
	// CardPath under it) or the card's own URL (ending in .json).
	URL string
	// Token, when set, is sent as Authorization: Bearer <token> (to the
	// card and the JSON-RPC endpoint). It is never logged.
	Token string
}

// Remotes asks remote A2A agents by the slug of their agent definition.
type Remotes struct {
	Agents map[string]RemoteAgent
	// HTTP makes the requests; nil: a client without a timeout (streams
	// last as long as their task; ctx bounds them).
	HTTP *http.Client
	// Resubscribes is DefaultResubscribes when 0.
	Resubscribes int
	// Backoff is the pause before resubscription n (1, 2, …); nil: 200 ms
	// doubling, at most 5 s.
	Backoff func(n int) time.Duration
	Logger  *slog.Logger

	mu        sync.Mutex
	endpoints map[string]string // JSON-RPC URLs by slug, from the cards
}

var _ agent.Remote = (*Remotes)(nil)

func (rs *Remotes) client() *http.Client {
	if rs.HTTP != nil {
		return rs.HTTP
	}
	return http.DefaultClient
}

func (rs *Remotes) log() *slog.Logger {
	if rs.Logger != nil {
		return rs.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Ask implements agent.Remote.
func (rs *Remotes) Ask(ctx context.Context, slug string, content []agent.Content, on func(agent.Delta) error) (agent.ChatResponse, error) {
	ra, ok := rs.Agents[slug]
	if !ok {
		return agent.ChatResponse{}, agent.Errorf(agent.CodeUnavailable, "agent %s has no remote A2A agent configured", slug)
	}
	endpoint, err := rs.endpoint(ctx, slug, ra)
	if err != nil {
		return agent.ChatResponse{}, err
	}
	parts, err := partsOf(content)
	if err != nil {
		return agent.ChatResponse{}, err
	}
	f := &follower{on: on, texts: map[string]string{}}
	msg := Message{MessageID: agent.NewID(), Role: RoleUser, Parts: parts}
	err = rs.stream(ctx, endpoint, ra, "SendStreamingMessage", map[string]any{"message": msg}, f)
	for tries := 0; err == nil && !f.settled(); {
		// The stream ended before the task settled: resubscribe.
		if f.taskID == "" {
			err = agent.Errorf(agent.CodeModelError, "remote agent %s: the stream ended before it named its task", slug)
			break
		}
		tries++
		if tries > rs.resubscribes() {
			err = agent.Errorf(agent.CodeModelError, "remote agent %s: its stream of task %s dropped %d times in a row", slug, f.taskID, tries-1)
			break
		}
		rs.log().Info("a2a_remote_resubscribe", "agent", slug, "task_id", f.taskID, "try", tries)
		if err = rs.pause(ctx, tries); err != nil {
			break
		}
		before := f.text()
		err = rs.stream(ctx, endpoint, ra, "SubscribeToTask", map[string]any{"id": f.taskID}, f)
		if f.text() != before {
			tries = 0 // it made progress: the count is of drops in a row
		}
	}
	if ctx.Err() != nil {
		if f.taskID != "" {
			rs.cancel(ctx, endpoint, ra, f.taskID)
		}
		return agent.ChatResponse{Text: f.text()}, ctx.Err()
	}
	if err != nil {
		return agent.ChatResponse{Text: f.text()}, err
	}
	switch f.state {
	case StateCompleted:
		return agent.ChatResponse{Text: f.text()}, nil
	case StateInputRequired, "TASK_STATE_AUTH_REQUIRED":
		rs.cancel(ctx, endpoint, ra, f.taskID)
		return agent.ChatResponse{Text: f.text()}, agent.Errorf(agent.CodeModelError, "remote agent %s asks for input (%s), which a delegation cannot give: %s", slug, f.state, f.status)
	}
	return agent.ChatResponse{Text: f.text()}, agent.Errorf(agent.CodeModelError, "remote agent %s: its task ended %s: %s", slug, strings.ToLower(strings.TrimPrefix(f.state, "TASK_STATE_")), f.status)
}

func (rs *Remotes) resubscribes() int {
	if rs.Resubscribes > 0 {
		return rs.Resubscribes
	}
	return DefaultResubscribes
}

func (rs *Remotes) pause(ctx context.Context, n int) error {
	d := min(200*time.Millisecond<<(n-1), 5*time.Second)
	if rs.Backoff != nil {
		d = rs.Backoff(n)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endpoint is the JSON-RPC URL of remote agent slug, from its card.
func (rs *Remotes) endpoint(ctx context.Context, slug string, ra RemoteAgent) (string, error) {
	rs.mu.Lock()
	u, ok := rs.endpoints[slug]
	rs.mu.Unlock()
	if ok {
		return u, nil
	}
	card := ra.URL
	if !strings.HasSuffix(card, ".json") {
		card = strings.TrimSuffix(card, "/") + CardPath
	}
	ctx, cancel := context.WithTimeout(ctx, cardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, card, nil)
	if err != nil {
		return "", agent.Errorf(agent.CodeUnavailable, "remote agent %s: bad card URL: %v", slug, err)
	}
	authorize(req, ra)
	resp, err := rs.client().Do(req)
	if err != nil {
		return "", agent.Errorf(agent.CodeUnavailable, "remote agent %s: its card: %v", slug, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", agent.Errorf(agent.CodeUnavailable, "remote agent %s: its card %s answered %s", slug, card, resp.Status)
	}
	var c Card
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&c); err != nil {
		return "", agent.Errorf(agent.CodeUnavailable, "remote agent %s: its card is not JSON: %v", slug, err)
	}
	// A 1.x JSON-RPC interface: a card may list 0.3's too, which takes
	// other method names.
	for _, in := range c.SupportedInterfaces {
		if strings.EqualFold(in.ProtocolBinding, "JSONRPC") && in.URL != "" && !strings.HasPrefix(in.ProtocolVersion, "0.") {
			rs.mu.Lock()
			if rs.endpoints == nil {
				rs.endpoints = map[string]string{}
			}
			rs.endpoints[slug] = in.URL
			rs.mu.Unlock()
			return in.URL, nil
		}
	}
	return "", agent.Errorf(agent.CodeUnavailable, "remote agent %s: its card names no A2A 1.x JSONRPC interface; agentik speaks A2A 1.0's JSON-RPC binding", slug)
}

func authorize(req *http.Request, ra RemoteAgent) {
	if ra.Token != "" {
		req.Header.Set("Authorization", "Bearer "+ra.Token)
	}
}

// partsOf is content as A2A parts: text as text, images as raw bytes.
func partsOf(content []agent.Content) ([]Part, error) {
	var parts []Part
	for _, c := range content {
		switch c.Type {
		case agent.ContentText:
			parts = append(parts, textPart(c.Body))
		case agent.ContentImage:
			b, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				return nil, agent.Errorf(agent.CodeBadRequest, "an image of the message is not base64: %v", err)
			}
			parts = append(parts, Part{Raw: b, MediaType: c.Mime})
		}
	}
	if len(parts) == 0 {
		return nil, agent.Errorf(agent.CodeBadRequest, "the message for the remote agent is empty")
	}
	return parts, nil
}

// rpcFrame is one JSON-RPC response: a stream's event or an error.
type rpcFrame struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// stream makes a streaming call and feeds its events to f until the
// stream ends (nil: it ended, settled or not) or fails (an error of the
// call itself: a refusal, a JSON-RPC error). A connection that breaks
// mid-stream is an end, not an error: the caller resubscribes.
func (rs *Remotes) stream(ctx context.Context, endpoint string, ra RemoteAgent, method string, params any, f *follower) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": agent.NewID(), "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return agent.Errorf(agent.CodeUnavailable, "remote agent: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("A2A-Version", ProtocolVersion)
	authorize(req, ra)
	resp, err := rs.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if method == "SubscribeToTask" {
			return nil // unreachable for now: the next try
		}
		return agent.Errorf(agent.CodeUnavailable, "remote agent: %s: %v", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
		if method == "SubscribeToTask" && resp.StatusCode >= 500 {
			return nil
		}
		return agent.Errorf(agent.CodeModelError, "remote agent: %s answered %s: %s", method, resp.Status, agent.Shorten(strings.TrimSpace(string(b)), 500))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var fr rpcFrame // a JSON-RPC error answers in JSON
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&fr); err != nil {
			return agent.Errorf(agent.CodeModelError, "remote agent: %s: neither a stream nor JSON: %v", method, err)
		}
		return f.frame(method, fr)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				var fr rpcFrame
				if err := json.Unmarshal(data.Bytes(), &fr); err != nil {
					return agent.Errorf(agent.CodeModelError, "remote agent: %s: an event is not JSON: %v", method, err)
				}
				data.Reset()
				if err := f.frame(method, fr); err != nil {
					return err
				}
				if f.settled() {
					return nil
				}
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil // ended or broke: settled or not, the caller decides
}

// cancel asks the remote agent to cancel its task (the delegation was
// interrupted, or cannot go on); best effort, bounded.
func (rs *Remotes) cancel(ctx context.Context, endpoint string, ra RemoteAgent, taskID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cardTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": agent.NewID(), "method": "CancelTask", "params": map[string]any{"id": taskID}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", ProtocolVersion)
	authorize(req, ra)
	resp, err := rs.client().Do(req)
	if err != nil {
		rs.log().Info("a2a_remote_cancel_failed", "task_id", taskID, "err", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

// follower keeps what a delegation saw of a remote task: its id, its
// state, and the text of each artifact, passing on each new piece once.
type follower struct {
	on     func(agent.Delta) error
	taskID string
	state  string
	status string // the text of the status message
	order  []string
	texts  map[string]string // artifact text by artifact id
	done   bool              // a direct message answered: no task
}

func (f *follower) settled() bool {
	return f.done || terminal(f.state) || f.state == StateInputRequired || f.state == "TASK_STATE_AUTH_REQUIRED" || f.state == "TASK_STATE_REJECTED"
}

func (f *follower) text() string {
	var b strings.Builder
	for _, id := range f.order {
		b.WriteString(f.texts[id])
	}
	return b.String()
}

// set makes artifact id's text t, passing on what the whole answer
// gained (a snapshot that repeats what was seen passes on nothing).
func (f *follower) set(id, t string) error {
	before := f.text()
	if _, ok := f.texts[id]; !ok {
		f.order = append(f.order, id)
	}
	f.texts[id] = t
	after := f.text()
	if piece, ok := strings.CutPrefix(after, before); ok && piece != "" {
		return f.on(agent.Delta{Text: piece})
	}
	return nil
}

func partsText(ps []Part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// frame takes one JSON-RPC response of a stream.
func (f *follower) frame(method string, fr rpcFrame) error {
	if fr.Error != nil {
		return agent.Errorf(agent.CodeModelError, "remote agent: %s: %s (%d)", method, fr.Error.Message, fr.Error.Code)
	}
	var ev StreamResponse
	if err := json.Unmarshal(fr.Result, &ev); err != nil {
		return agent.Errorf(agent.CodeModelError, "remote agent: %s: an event is not a StreamResponse: %v", method, err)
	}
	switch {
	case ev.Task != nil:
		f.taskID, f.state = ev.Task.ID, ev.Task.Status.State
		if m := ev.Task.Status.Message; m != nil {
			f.status = partsText(m.Parts)
		}
		for _, a := range ev.Task.Artifacts {
			if err := f.set(a.ArtifactID, partsText(a.Parts)); err != nil {
				return err
			}
		}
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		if f.taskID == "" {
			f.taskID = u.TaskID
		}
		t := partsText(u.Artifact.Parts)
		if u.Append {
			t = f.texts[u.Artifact.ArtifactID] + t
		}
		return f.set(u.Artifact.ArtifactID, t)
	case ev.StatusUpdate != nil:
		if f.taskID == "" {
			f.taskID = ev.StatusUpdate.TaskID
		}
		f.state = ev.StatusUpdate.Status.State
		if m := ev.StatusUpdate.Status.Message; m != nil {
			f.status = partsText(m.Parts)
		}
	case ev.Message != nil:
		f.done, f.state = true, StateCompleted
		return f.set("message:"+ev.Message.MessageID, partsText(ev.Message.Parts))
	default:
		return fmt.Errorf("remote agent: %s: an empty event", method)
	}
	return nil
}
