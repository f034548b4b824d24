package telemetry_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentik/agentik/internal/telemetry"
)

// The turn's log lines carry its trace id.
func TestTurnLogLinesCarryTraceID(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	var out strings.Builder
	log := slog.New(telemetry.LogHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	tel := telemetry.New(telemetry.Options{Tracer: tp.Tracer("t"), Logger: log})
	ctx, end := tel.TurnContext(context.Background(), "conv1")
	log.ErrorContext(ctx, "turn_failed", "conversation_id", "conv1")
	end()
	id := trace.SpanContextFromContext(ctx).TraceID().String()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("log:\n%s", out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, "trace_id="+id) {
			t.Errorf("line without the turn's trace id %s: %s", id, l)
		}
	}
}
