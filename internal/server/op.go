package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// An op is one operation of the agentik surface declared once: its
// WebSocket op name, how its input is read and checked, the use case it
// runs and its result. Its REST route (routes.go, through Server.op) and
// the WebSocket op of its name both dispatch through it, so the two cannot
// drift. Every WebSocket op is one of the table but the connection's own
// (subscribe, unsubscribe, ping: ws.go); TestOpTable holds both surfaces
// to it.
//
// The input is one JSON object: on the WebSocket the command frame itself
// (op and id besides), over REST the body, then the query parameters,
// then the route's path values, each under its own name (the wildcard
// {schedule_id} is the field schedule_id), later ones winning. A path
// value and a body field of the same name must agree.
type op struct {
	name   string // the WebSocket op
	status int    // the REST status on success (200 when 0; 204 answers no body)
	call   func(ctx context.Context, s *Server, in []byte, fields map[string]string) (any, error)
	// serve, when set, answers the REST route instead of writing the
	// result as JSON: run runs the op (a send streams its turn as SSE).
	serve func(s *Server, w http.ResponseWriter, r *http.Request, run func() (any, error))
}

// checker is an op input that checks itself once decoded.
type checker interface{ check() error }

// decoder is an op input that reads its body or frame itself (strictly,
// say); the query and path fields are still merged after it.
type decoder interface{ decode(b []byte) error }

// declare makes the op name whose input is a T, run by run.
func declare[T any](name string, status int, run func(ctx context.Context, s *Server, in T) (any, error)) *op {
	return &op{name: name, status: status, call: func(ctx context.Context, s *Server, b []byte, fields map[string]string) (any, error) {
		var in T
		if len(bytes.TrimSpace(b)) > 0 {
			if d, ok := any(&in).(decoder); ok {
				if err := d.decode(b); err != nil {
					return nil, err
				}
			} else if err := json.Unmarshal(b, &in); err != nil {
				return nil, inputError(name, b, err)
			}
		}
		if len(fields) > 0 {
			fb, _ := json.Marshal(fields)
			if err := json.Unmarshal(fb, &in); err != nil {
				return nil, agent.Errorf(agent.CodeBadRequest, "%s: %s", name, protocol.JSONProblem(fb, err))
			}
		}
		if c, ok := any(&in).(checker); ok {
			if err := c.check(); err != nil {
				return nil, err
			}
		}
		return run(ctx, s, in)
	}}
}

// streamed makes o's REST route answer with serve instead of JSON.
func streamed(o *op, serve func(s *Server, w http.ResponseWriter, r *http.Request, run func() (any, error))) *op {
	o.serve = serve
	return o
}

// inputError is the bad_request of an input b that is not the op's JSON
// object: the field and the type it must have when that is known, else
// where the document goes wrong.
func inputError(name string, b []byte, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return agent.Errorf(agent.CodeBadRequest, "%s: %s", name, protocol.JSONProblem(b, err))
	}
	return agent.Errorf(agent.CodeBadRequest, "%s takes a JSON object: %s", name, protocol.JSONProblem(b, err))
}

// need is the bad_request of an op missing a field.
func need(field, v string) error {
	if v == "" {
		return agent.Errorf(agent.CodeBadRequest, "%s is required", field)
	}
	return nil
}

// limitOf reads a limit field given as a number or a string (a query
// parameter); 0 when absent.
func limitOf(v json.Number) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := v.Int64()
	if err != nil {
		return 0, agent.Errorf(agent.CodeBadRequest, "limit must be an integer, got %q", agent.Shorten(string(v), 20))
	}
	return int(n), nil
}

// op returns the REST handler of o and makes o a WebSocket op of s: the
// table the WebSocket dispatches through is exactly what routes.go
// registers this way.
func (s *Server) op(o *op) http.HandlerFunc {
	if s.ops == nil {
		s.ops = map[string]*op{}
	}
	s.ops[o.name] = o
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			var tooBig *http.MaxBytesError
			if !errors.As(err, &tooBig) {
				err = agent.Errorf(agent.CodeBadRequest, "read body: %v", err)
			}
			s.writeError(w, r, err)
			return
		}
		fields := map[string]string{}
		for k, v := range r.URL.Query() {
			if len(v) > 0 {
				fields[k] = v[0]
			}
		}
		for _, name := range wildcards(r.Pattern) {
			v := r.PathValue(name)
			if err := agrees(b, name, v); err != nil {
				s.writeError(w, r, err)
				return
			}
			fields[name] = v
		}
		run := func() (any, error) { return o.call(r.Context(), s, b, fields) }
		if o.serve != nil {
			o.serve(s, w, r, run)
			return
		}
		res, err := run()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		switch raw, isRaw := res.(json.RawMessage); {
		case o.status == http.StatusNoContent:
			w.WriteHeader(http.StatusNoContent)
		case isRaw: // already encoded (a cached list page)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(cmp.Or(o.status, http.StatusOK))
			_, _ = w.Write(raw)
			_, _ = w.Write([]byte{'\n'}) // as writeJSON's encoder ends it
		default:
			writeJSON(w, cmp.Or(o.status, http.StatusOK), res)
		}
	}
}

// agrees checks that a body naming the path value name names v: PATCH
// /agentik/agents/a with {"slug":"b"} is refused, not read as a.
func agrees(body []byte, name, v string) error {
	if !bytes.Contains(body, []byte(`"`+name+`"`)) {
		return nil // the usual case, without decoding the body twice
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil // the op's decoding says what is wrong
	}
	raw, ok := top[name]
	if !ok {
		return nil
	}
	var got string
	if json.Unmarshal(raw, &got) != nil || got != v {
		return agent.Errorf(agent.CodeBadRequest, "%s is %q in the path but %s in the body; leave it out of the body", name, agent.Shorten(v, 40), agent.Shorten(string(raw), 40))
	}
	return nil
}

// tableOp runs cmd's op of the table.
func (s *Server) tableOp(ctx context.Context, cmd protocol.Command) (any, error) {
	o := s.ops[cmd.Op]
	if o == nil {
		if cmd.Op == "" {
			return nil, agent.Errorf(agent.CodeBadRequest, "op is required, e.g. {\"op\":\"ping\",\"id\":\"1\"}")
		}
		return nil, agent.Errorf(agent.CodeBadRequest, "unknown op %q; see docs/PROTOCOL.md for the list", agent.Shorten(cmd.Op, 40))
	}
	return o.call(ctx, s, cmd.Frame, nil)
}

// wildcards are the names of a route pattern's {wildcards}.
func wildcards(pattern string) []string {
	var names []string
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			return names
		}
		name := strings.TrimSuffix(pattern[i+1:i+j], "...")
		if name != "$" {
			names = append(names, name)
		}
		pattern = pattern[i+j+1:]
	}
}

// okReply is what a delete answers: {"ok":true}.
type okReply struct {
	OK bool `json:"ok"`
}

// integer is an integer field of an op's input: a JSON number on the
// WebSocket, a query parameter's text over REST. Set says it was given.
type integer struct {
	N   int64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *integer) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	lit := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &lit); err != nil {
			return err
		}
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return &json.UnmarshalTypeError{Value: agent.Shorten(string(b), 40), Type: reflect.TypeFor[int64]()}
	}
	n.N, n.Set = v, true
	return nil
}

// or is the value, def when it was not given.
func (n integer) or(def int64) int64 {
	if n.Set {
		return n.N
	}
	return def
}

// conversationRef names one conversation: the field conversation_id, the
// route's {conversation_id}.
type conversationRef struct {
	ConversationID string `json:"conversation_id"`
}

func (r *conversationRef) check() error { return need("conversation_id", r.ConversationID) }
