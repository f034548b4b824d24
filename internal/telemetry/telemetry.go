package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentik/agentik/internal/agent"
)

// GenAI semantic-convention attribute keys used on spans.
const (
	attrOperation    = "gen_ai.operation.name"
	attrProvider     = "gen_ai.provider.name"
	attrRequestModel = "gen_ai.request.model"
	attrInputTokens  = "gen_ai.usage.input_tokens"
	attrOutputTokens = "gen_ai.usage.output_tokens"
	attrConversation = "gen_ai.conversation.id"
	attrToolName     = "gen_ai.tool.name"
	attrToolCallID   = "gen_ai.tool.call.id"
	attrErrorType    = "error.type"
)

// Telemetry decorates the agent's seams with metrics and spans.
type Telemetry struct {
	m      *Metrics     // nil: no metrics
	tracer trace.Tracer // a no-op tracer when tracing is off
	log    *slog.Logger
	now    func() time.Time
}

// Options configure New.
type Options struct {
	Metrics *Metrics     // nil: no metrics
	Tracer  trace.Tracer // nil: no spans
	Logger  *slog.Logger
	Now     func() time.Time // default time.Now
}

// New makes a Telemetry.
func New(o Options) *Telemetry {
	t := &Telemetry{m: o.Metrics, tracer: o.Tracer, log: o.Logger, now: o.Now}
	if t.tracer == nil {
		t.tracer = noop.NewTracerProvider().Tracer("")
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// turnKey carries the turn's conversation id and usage in its context.
type turnKey struct{}

type turnInfo struct {
	conversationID string
	mu             sync.Mutex
	usage          agent.Usage
	failed         string // error type of a failed model call
}

func turnFrom(ctx context.Context) *turnInfo {
	ti, _ := ctx.Value(turnKey{}).(*turnInfo)
	return ti
}

// TurnContext is agent.Config.TurnContext: it starts the turn's
// invoke_agent span, the parent of its model and tool spans, and ends it
// with the turn's token usage.
func (t *Telemetry) TurnContext(ctx context.Context, conversationID string) (context.Context, func()) {
	ti := &turnInfo{conversationID: conversationID}
	ctx = context.WithValue(ctx, turnKey{}, ti)
	ctx, span := t.tracer.Start(ctx, "invoke_agent", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(attrOperation, "invoke_agent"), attribute.String(attrConversation, conversationID)))
	t.log.DebugContext(ctx, "turn_started", "conversation_id", conversationID)
	return ctx, func() {
		ti.mu.Lock()
		u, failed := ti.usage, ti.failed
		ti.mu.Unlock()
		span.SetAttributes(attribute.Int(attrInputTokens, u.PromptTokens), attribute.Int(attrOutputTokens, u.CompletionTokens))
		if failed != "" {
			span.SetAttributes(attribute.String(attrErrorType, failed))
			span.SetStatus(codes.Error, failed)
		}
		t.log.DebugContext(ctx, "turn_ended", "conversation_id", conversationID)
		span.End()
	}
}

// Model decorates m: requests, errors, duration, time to first token and
// tokens; a "chat <model>" span per call.
func (t *Telemetry) Model(m agent.Model, name string) agent.Model {
	return &model{t: t, next: m, name: name}
}

type model struct {
	t    *Telemetry
	next agent.Model
	name string
}

func (m *model) Chat(ctx context.Context, req agent.ChatRequest, on func(agent.Delta) error) (agent.ChatResponse, error) {
	if req.Model != "" && req.Model != m.name { // the conversation's own model
		c := *m
		c.name = req.Model
		m = &c
	}
	t := m.t
	attrs := []attribute.KeyValue{attribute.String(attrOperation, "chat"), attribute.String(attrProvider, "openai"),
		attribute.String(attrRequestModel, m.name)}
	ti := turnFrom(ctx)
	if ti != nil {
		attrs = append(attrs, attribute.String(attrConversation, ti.conversationID))
	}
	ctx, span := t.tracer.Start(ctx, "chat "+m.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	start := t.now()
	first := true
	resp, err := m.next.Chat(ctx, req, func(d agent.Delta) error {
		if first {
			first = false
			if t.m != nil {
				t.m.modelTTFT.WithLabelValues(m.name).Observe(t.now().Sub(start).Seconds())
			}
		}
		return on(d)
	})
	u := resp.Usage
	span.SetAttributes(attribute.Int(attrInputTokens, u.PromptTokens), attribute.Int(attrOutputTokens, u.CompletionTokens))
	code := ""
	if err != nil && ctx.Err() == nil {
		code = errorCode(err)
		span.SetAttributes(attribute.String(attrErrorType, code))
		span.SetStatus(codes.Error, err.Error())
	}
	if ti != nil {
		ti.mu.Lock()
		ti.usage.PromptTokens += u.PromptTokens
		ti.usage.CompletionTokens += u.CompletionTokens
		ti.usage.TotalTokens += u.TotalTokens
		if code != "" {
			ti.failed = code
		}
		ti.mu.Unlock()
	}
	if t.m != nil {
		t.m.modelRequests.WithLabelValues(m.name).Inc()
		t.m.modelDuration.WithLabelValues(m.name).Observe(t.now().Sub(start).Seconds())
		if code != "" {
			t.m.modelErrors.WithLabelValues(m.name, code).Inc()
		}
		if u.PromptTokens > 0 {
			t.m.modelTokens.WithLabelValues(m.name, "prompt").Add(float64(u.PromptTokens))
		}
		if u.CompletionTokens > 0 {
			t.m.modelTokens.WithLabelValues(m.name, "completion").Add(float64(u.CompletionTokens))
		}
	}
	return resp, err
}

// errorCode is an error's agent code (model_error, unavailable, …), a
// bounded label value.
func errorCode(err error) string {
	var e *agent.Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return agent.CodeInternal
}

// Tools decorates tl: calls by tool server and outcome, duration; an
// "execute_tool <name>" span per call. content is tl's calls with their
// images (agent.Config.ContentTools; nil: tl's text only): the decorator
// passes them on, so it is the runner's ContentTools as well as its Tools.
// servers maps a tool's name to its server (tool.Manager.Servers); may be
// nil.
func (t *Telemetry) Tools(tl agent.Tools, content agent.ContentTools, servers func() []agent.ToolServer) *ObservedTools {
	return &ObservedTools{t: t, next: tl, content: content, servers: servers}
}

// ObservedTools is the Tools decorator (Telemetry.Tools): an agent.Tools
// and an agent.ContentTools.
type ObservedTools struct {
	t       *Telemetry
	next    agent.Tools
	content agent.ContentTools // nil: next's text only
	servers func() []agent.ToolServer
}

var (
	_ agent.Tools        = (*ObservedTools)(nil)
	_ agent.ContentTools = (*ObservedTools)(nil)
)

// Specs lists the decorated tools.
func (tl *ObservedTools) Specs(ctx context.Context) []agent.ToolSpec { return tl.next.Specs(ctx) }

// Servers lists the tool servers, as the decorated Tools would (the
// agents service is given them by app.Wire, agent.AgentsConfig.Servers).
func (tl *ObservedTools) Servers() []agent.ToolServer {
	if tl.servers == nil {
		return nil
	}
	return tl.servers()
}

func (tl *ObservedTools) Call(ctx context.Context, name, arguments string) (string, error) {
	out, err := tl.CallContent(ctx, name, arguments)
	return out.Text, err
}

// CallContent implements agent.ContentTools: the images of a result pass
// through when the decorator was given the tools' ContentTools.
func (tl *ObservedTools) CallContent(ctx context.Context, name, arguments string) (agent.ToolOutput, error) {
	t := tl.t
	server := tl.server(name)
	attrs := []attribute.KeyValue{attribute.String(attrOperation, "execute_tool"), attribute.String(attrToolName, name),
		attribute.String("agentik.tool.server", server)}
	if ti := turnFrom(ctx); ti != nil {
		attrs = append(attrs, attribute.String(attrConversation, ti.conversationID))
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer span.End()
	start := t.now()
	var res agent.ToolOutput
	var err error
	if tl.content != nil {
		res, err = tl.content.CallContent(ctx, name, arguments)
	} else {
		res.Text, err = tl.next.Call(ctx, name, arguments)
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
		span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
		span.SetStatus(codes.Error, err.Error())
	}
	if t.m != nil {
		t.m.toolCalls.WithLabelValues(server, outcome).Inc()
		t.m.toolDuration.WithLabelValues(server).Observe(t.now().Sub(start).Seconds())
	}
	return res, err
}

// server finds the tool server offering name; "unknown" for a name no
// server lists (a model may call tools that do not exist), so the label
// stays bounded.
func (tl *ObservedTools) server(name string) string {
	if tl.servers != nil {
		for _, s := range tl.servers() {
			for _, n := range s.Tools {
				if n == name {
					return s.Name
				}
			}
		}
	}
	return "unknown"
}
