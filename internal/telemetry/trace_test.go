package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/telemetry"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that decodes each export.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	paths []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paths = append(o.paths, r.URL.Path)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func attrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		if kv.Value.GetStringValue() != "" {
			m[kv.Key] = kv.Value.GetStringValue()
		} else {
			m[kv.Key] = kv.Value.GetIntValue()
		}
	}
	return m
}

func TestTracesOnePerTurn(t *testing.T) {
	rcv := &otlpReceiver{}
	col := httptest.NewServer(rcv)
	defer col.Close()
	rg := newRig(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL})
	id := rg.create(t)
	rg.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "fs__read", Arguments: "{}"}},
		Usage: &agent.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}})
	rg.fake.Enqueue(llmtest.Reply{Text: "read", Usage: &agent.Usage{PromptTokens: 20, CompletionTokens: 3, TotalTokens: 23}})
	rg.send(t, id, "one")
	rg.waitIdle(t, id)
	rg.fake.Enqueue(llmtest.Reply{Text: "two", Usage: &agent.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}})
	rg.send(t, id, "two")
	rg.waitIdle(t, id)
	rg.close() // every turn's span has ended, and the shutdown flushed them to the receiver

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, p := range rcv.paths {
		if p != "/v1/traces" {
			t.Errorf("exported to %s, want /v1/traces", p)
		}
	}
	traces := map[string][]*tracepb.Span{}
	var order []string
	for _, s := range rcv.spans {
		k := string(s.TraceId)
		if traces[k] == nil {
			order = append(order, k)
		}
		traces[k] = append(traces[k], s)
	}
	if len(traces) != 2 {
		t.Fatalf("%d traces, want 2 (one per turn); spans %d", len(traces), len(rcv.spans))
	}
	type want struct {
		names         map[string]int
		input, output int64
	}
	wants := []want{
		{map[string]int{"invoke_agent": 1, "chat fake": 2, "execute_tool fs__read": 1}, 30, 5},
		{map[string]int{"invoke_agent": 1, "chat fake": 1}, 7, 1},
	}
	// Order the traces by their turn: the first has the tool call.
	if len(traces[order[0]]) < len(traces[order[1]]) {
		order[0], order[1] = order[1], order[0]
	}
	for i, k := range order {
		spans := traces[k]
		names := map[string]int{}
		var root *tracepb.Span
		for _, s := range spans {
			names[s.Name]++
			if s.Name == "invoke_agent" {
				root = s
			}
		}
		for n, c := range wants[i].names {
			if names[n] != c {
				t.Errorf("turn %d: %d %q spans, want %d (got %v)", i+1, names[n], n, c, names)
			}
		}
		if root == nil {
			continue
		}
		ra := attrs(root)
		if ra["gen_ai.conversation.id"] != id || ra["gen_ai.usage.input_tokens"] != wants[i].input || ra["gen_ai.usage.output_tokens"] != wants[i].output {
			t.Errorf("turn %d: invoke_agent attributes %v", i+1, ra)
		}
		for _, s := range spans {
			if s == root {
				continue
			}
			if string(s.ParentSpanId) != string(root.SpanId) {
				t.Errorf("turn %d: %s is not a child of invoke_agent", i+1, s.Name)
			}
			a := attrs(s)
			if a["gen_ai.conversation.id"] != id {
				t.Errorf("turn %d: %s has conversation %v", i+1, s.Name, a["gen_ai.conversation.id"])
			}
			switch s.Name {
			case "chat fake":
				if a["gen_ai.request.model"] != "fake" || a["gen_ai.operation.name"] != "chat" {
					t.Errorf("chat span attributes %v", a)
				}
			case "execute_tool fs__read":
				if a["gen_ai.tool.name"] != "fs__read" || a["gen_ai.operation.name"] != "execute_tool" {
					t.Errorf("tool span attributes %v", a)
				}
			}
		}
	}
}

func TestTracingOffWhenUnset(t *testing.T) {
	tr, err := telemetry.NewTracing(context.Background(), func(string) string { return "" }, "")
	if tr != nil || err != nil {
		t.Fatalf("NewTracing with no OTEL variables = %v, %v; want off", tr, err)
	}
	_, err = telemetry.NewTracing(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
			return "not a url"
		}
		return ""
	}, "")
	if err == nil {
		t.Fatal("a malformed endpoint was accepted")
	}
}
