package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// What agentik declares to MCP servers beyond tools, and how it serves
// what they ask while a call runs (docs/ARCHITECTURE.md, "MCP client"):
//
//   - elicitation, form and URL mode (2025-11-25): a server's
//     elicitation/create during a call goes to the turn that made the call
//     (agent.ToolHooks.Elicit), which stores it and waits for the user's
//     answer; the call's idle timeout is held meanwhile;
//   - progress (notifications/progress, 2025-03-26 with message): shown
//     live through agent.ToolHooks.Progress, and each one keeps the call
//     alive;
//   - logging (notifications/message): written to agentik's log at debug
//     level, for the operator; the model never sees it;
//   - tools that require task augmentation (2025-11-25 tasks) are not
//     offered: agentik does not run tools as tasks.

// inflight is one running call of a session.
type inflight struct {
	hooks *agent.ToolHooks // nil outside a turn
	ctx   context.Context  // the call's
	reset func(stop bool)  // restart the idle timer, or stop it while the user answers
	// order is when the call was sent (stdio: written; route.go), 0
	// before; asking counts the elicitations routed to it and not yet
	// answered. Both under the session's progMu.
	order  uint64
	asking int
}

type inflightKey struct{}

func withInflight(ctx context.Context, inf *inflight) context.Context {
	return context.WithValue(ctx, inflightKey{}, inf)
}

// onProgress keeps the call alive and shows its progress.
func (inf *inflight) onProgress(n mcp.JSONRPCNotification) {
	inf.reset(false)
	if inf.hooks == nil || inf.hooks.Progress == nil {
		return
	}
	f := n.Params.AdditionalFields
	p := agent.Progress{}
	p.Progress, _ = f["progress"].(float64)
	p.Total, _ = f["total"].(float64)
	p.Message, _ = f["message"].(string)
	inf.hooks.Progress(p)
}

// clientOptions are the options of every session's MCP client: the
// capabilities beyond tools, and the handler of elicitations.
func (s *session) clientOptions() []client.ClientOption {
	return []client.ClientOption{
		client.WithClientCapabilities(mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
		}),
		client.WithElicitationHandler(elicitHandler{s}),
	}
}

// elicitHandler hands a server's elicitation to the turn whose call it
// belongs to.
type elicitHandler struct{ s *session }

// Elicit implements client.ElicitationHandler.
func (h elicitHandler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	inf := h.s.callOf(ctx, req)
	if inf == nil {
		return nil, errors.New("agentik has no running tool call of this server to ask the user for")
	}
	defer h.s.answered(inf)
	if inf.hooks == nil || inf.hooks.Elicit == nil {
		return nil, errors.New("agentik has no running tool call of this server to ask the user for")
	}
	p := req.Params
	er := agent.ElicitRequest{Server: h.s.cfg.Name, Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID}
	if er.Mode == "" {
		er.Mode = agent.ElicitForm
	}
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("requested schema: %w", err)
		}
		er.Schema = b
	}
	h.s.log.Debug("mcp_elicitation", "mode", er.Mode, "message", er.Message)
	inf.reset(true) // a person answers: no idle timeout meanwhile
	defer inf.reset(false)
	res, err := inf.hooks.Elicit(inf.ctx, er)
	if err != nil {
		return nil, err
	}
	out := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(res.Action)}}
	if res.Action == agent.ElicitAccept && len(res.Content) > 0 {
		var content map[string]any
		if err := json.Unmarshal(res.Content, &content); err == nil {
			out.Content = content
		}
	}
	return out, nil
}

// callOf finds the running call an elicitation belongs to, counted as
// asking: the one whose request carried it (streamable HTTP sends it on
// the call's own stream), else the one the stdio reader routed it to, else
// the one claim picks now (route.go).
func (s *session) callOf(ctx context.Context, req mcp.ElicitationRequest) *inflight {
	if inf, ok := ctx.Value(inflightKey{}).(*inflight); ok {
		s.progMu.Lock()
		inf.asking++
		s.progMu.Unlock()
		return inf
	}
	tok := ""
	if m := req.Params.Meta; m != nil {
		if s.proc != nil {
			tok, _ = m.AdditionalFields[callKey].(string)
		} else if t, ok := m.ProgressToken.(string); ok {
			tok = s.claim(t)
		}
	} else if s.proc == nil {
		tok = s.claim("")
	}
	s.progMu.Lock()
	defer s.progMu.Unlock()
	return s.progress[tok]
}

// answered ends an elicitation of inf.
func (s *session) answered(inf *inflight) {
	s.progMu.Lock()
	inf.asking--
	s.progMu.Unlock()
}

// onLog writes a server's log message to agentik's log, at debug level:
// for the operator, never for the model.
func (s *session) onLog(n mcp.JSONRPCNotification) {
	f := n.Params.AdditionalFields
	level, _ := f["level"].(string)
	logger, _ := f["logger"].(string)
	data, err := json.Marshal(f["data"])
	if err != nil {
		return
	}
	s.log.Debug("mcp_log", "mcp_server", s.cfg.Name, "log_level", level, "logger", logger, "data", s.cfg.redact(capText(string(data), 4000)))
}

// callable reports whether agentik can call a tool: not one that requires
// task augmentation, which would only fail (-32601).
func callable(t mcp.Tool) bool {
	return t.Execution == nil || t.Execution.TaskSupport != mcp.TaskSupportRequired
}

// resultImages are the images of a tool result, for the tool card and a
// model with vision, as long as together they fit in maxBytes of base64
// (the others are only described in the text).
func resultImages(res *mcp.CallToolResult, maxBytes int) []agent.Content {
	var out []agent.Content
	n := 0
	for _, c := range res.Content {
		var mime, data string
		switch v := c.(type) {
		case mcp.ImageContent:
			mime, data = v.MIMEType, v.Data
		case mcp.EmbeddedResource:
			if b, ok := v.Resource.(mcp.BlobResourceContents); ok && isImageMime(b.MIMEType) {
				mime, data = b.MIMEType, b.Blob
			}
		}
		if data == "" || !isImageMime(mime) || n+len(data) > maxBytes*imageFactor {
			continue
		}
		n += len(data)
		out = append(out, agent.Content{Type: agent.ContentImage, Mime: mime, Data: data})
	}
	return out
}

// imageFactor: images may take this many times the text cap of a result.
const imageFactor = 40

func isImageMime(m string) bool {
	switch m {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
