package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// An op is one operation of the agentik surface declared once: its
// WebSocket op name, how its input is read, and the use case it runs.
// Its REST route (routes.go, through Server.op) and the WebSocket op of
// its name both dispatch through it, so the two cannot drift.
//
// The input is one JSON object: on the WebSocket the command frame itself
// (op and id besides), over REST the body, then the query parameters,
// then the route's path values, each under its own name (the wildcard
// {schedule_id} is the field schedule_id), later ones winning.
type op struct {
	name   string // the WebSocket op
	status int    // the REST status on success (200 when 0)
	call   func(ctx context.Context, s *Server, in []byte, fields map[string]string) (any, error)
}

// checker is an op input that checks itself once decoded.
type checker interface{ check() error }

// declare makes the op name whose input is a T, run by run.
func declare[T any](name string, status int, run func(ctx context.Context, s *Server, in T) (any, error)) *op {
	return &op{name: name, status: status, call: func(ctx context.Context, s *Server, b []byte, fields map[string]string) (any, error) {
		var in T
		if len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &in); err != nil {
				return nil, agent.Errorf(agent.CodeBadRequest, "%s takes a JSON object: %s", name, protocol.JSONProblem(b, err))
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

// need is the bad_request of an op missing a field.
func need(field, v string) error {
	if v == "" {
		return agent.Errorf(agent.CodeBadRequest, "%s is required", field)
	}
	return nil
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
			fields[name] = r.PathValue(name)
		}
		res, err := o.call(r.Context(), s, b, fields)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, cmp.Or(o.status, http.StatusOK), res)
	}
}

// tableOp runs cmd when its op is in the table; ok is false otherwise.
func (s *Server) tableOp(ctx context.Context, cmd protocol.Command) (res any, ok bool, err error) {
	o := s.ops[cmd.Op]
	if o == nil {
		return nil, false, nil
	}
	res, err = o.call(ctx, s, cmd.Frame, nil)
	return res, true, err
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
