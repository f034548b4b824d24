package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is the OpenTelemetry tracer provider exporting over OTLP/HTTP.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// endpointVars are the standard variables that turn tracing on, most
// specific first.
var endpointVars = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// NewTracing starts tracing when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set (and OTEL_SDK_DISABLED is not "true",
// OTEL_TRACES_EXPORTER not "none"); it returns nil, nil when tracing is
// off. A malformed endpoint fails, naming its variable. The exporter reads
// the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression) itself; only OTLP over HTTP/protobuf is built in.
func NewTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return nil, nil
	}
	var opts []otlptracehttp.Option
	for i, name := range endpointVars {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s: %q is not an http(s) URL", name, v)
		}
		if i == 1 { // the base endpoint: the traces path is appended
			u = u.JoinPath("v1/traces")
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		break
	}
	if len(opts) == 0 {
		return nil, nil
	}
	if p := getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported; use http/protobuf", p)
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "agentik"
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tp: tp}, nil
}

// Tracer is agentik's tracer.
func (t *Tracing) Tracer() trace.Tracer { return t.tp.Tracer("github.com/agentik/agentik") }

// Shutdown flushes the spans not yet exported, within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// LogHandler adds trace_id and span_id to records logged with a context
// that carries a span (the turn's log lines), so logs and traces join.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
