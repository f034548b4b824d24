package tool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// Which call a server's elicitation belongs to (docs/ARCHITECTURE.md,
// "MCP client"). Over streamable HTTP the server sends it on the call's
// own response stream, and mcp-go hands it over in that request's context.
// Over stdio nothing in the message ties it to a call: the SDKs'
// relatedRequestId only picks the HTTP stream. But the pipe is in order,
// and agentik owns both of its ends: the session notes each tools/call as
// it writes it, and reads each server request before mcp-go does. An
// elicitation goes to the call written first among those that do not
// wait for an answer already — what a server that starts its calls'
// handlers in order and asks once at a time does — unless its _meta
// names a call's progress token. The choice is made on the reader, in
// order (mcp-go then handles each request on a goroutine of its own, in
// any order), and travels to the handler in the request's _meta, under
// callKey. Over SSE, whose stream agentik does not read itself, calls are
// ordered by when they started.

// callKey is the _meta key the reader puts in an elicitation it has
// routed: the progress token of the call it belongs to.
const callKey = "agentik/call"

// orderedWriter is a stdio server's stdin: it notes the order in which
// tool calls are written. mcp-go writes each message in one Write.
type orderedWriter struct {
	s *session
	w io.WriteCloser
}

func (o orderedWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`"tools/call"`)) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &msg) == nil && msg.Method == "tools/call" {
			if tok, ok := msg.Params.Meta.ProgressToken.(string); ok {
				o.s.written(tok)
			}
		}
	}
	return o.w.Write(b)
}

func (o orderedWriter) Close() error { return o.w.Close() }

// routingReader is a stdio server's stdout: it routes each elicitation
// request to its call as it arrives, in order (see above).
type routingReader struct {
	s   *session
	r   *bufio.Reader
	buf []byte // what is left of the current line
	err error  // the read error, returned once the line before it is read
}

func newRoutingReader(s *session, r io.Reader) *routingReader {
	return &routingReader{s: s, r: bufio.NewReaderSize(r, 64<<10)}
}

func (rr *routingReader) Read(p []byte) (int, error) {
	for len(rr.buf) == 0 {
		if rr.err != nil {
			return 0, rr.err
		}
		var line []byte
		line, rr.err = rr.r.ReadBytes('\n')
		rr.buf = rr.s.route(line)
	}
	n := copy(p, rr.buf)
	rr.buf = rr.buf[n:]
	return n, nil
}

// route returns line, an elicitation request in it marked with the call it
// belongs to.
func (s *session) route(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"elicitation/create"`)) {
		return line
	}
	var msg map[string]json.RawMessage
	var method string
	if json.Unmarshal(line, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || method != "elicitation/create" || msg["id"] == nil {
		return line
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return line
	}
	var meta map[string]any
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return line
	}
	if meta == nil {
		meta = map[string]any{}
	}
	named, _ := meta["progressToken"].(string)
	delete(meta, callKey) // only the reader sets it
	if tok := s.claim(named); tok != "" {
		meta[callKey] = tok
	}
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(out, '\n')
}

// written notes that the call with progress token tok was written to the
// server.
func (s *session) written(tok string) {
	s.progMu.Lock()
	defer s.progMu.Unlock()
	if inf := s.progress[tok]; inf != nil {
		s.order++
		inf.order = s.order
	}
}

// claim picks the call an elicitation belongs to and counts it as asking
// (the handler's done ends that); it returns the call's progress token, ""
// when no call runs. named is a progress token the request gave itself.
func (s *session) claim(named string) string {
	s.progMu.Lock()
	defer s.progMu.Unlock()
	if inf := s.progress[named]; inf != nil {
		inf.asking++
		return named
	}
	best, tok := (*inflight)(nil), ""
	for t, inf := range s.progress {
		if inf.order == 0 {
			continue // not sent yet: the server cannot be asking for it
		}
		if best == nil || less(inf, best) {
			best, tok = inf, t
		}
	}
	if best != nil {
		best.asking++
	}
	return tok
}

// less orders the calls an elicitation may belong to: those not waiting
// for an answer first, then the earlier sent.
func less(a, b *inflight) bool {
	if (a.asking == 0) != (b.asking == 0) {
		return a.asking == 0
	}
	return a.order < b.order
}
