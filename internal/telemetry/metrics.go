package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentik/agentik/internal/agent"
)

// Turn outcomes, the label of the turn metrics.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"
	OutcomeInterrupted = "interrupted"
)

// durationBuckets suit model calls and turns: 50 ms to 5 min.
var durationBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160, 300}

// Metrics holds agentik's Prometheus collectors in their own registry (no
// package-level state: two servers in one test process do not collide).
type Metrics struct {
	reg *prometheus.Registry

	turns        *prometheus.CounterVec   // outcome
	turnDuration *prometheus.HistogramVec // outcome

	modelRequests *prometheus.CounterVec   // model
	modelErrors   *prometheus.CounterVec   // model, code
	modelDuration *prometheus.HistogramVec // model
	modelTTFT     *prometheus.HistogramVec // model
	modelTokens   *prometheus.CounterVec   // model, kind

	toolCalls    *prometheus.CounterVec   // server, outcome
	toolDuration *prometheus.HistogramVec // server

	streams *prometheus.GaugeVec // kind: ws, sse

	eventsAppended prometheus.Counter
	batchSize      prometheus.Histogram
	compactions    prometheus.Counter

	httpRequests *prometheus.CounterVec   // route, status
	httpDuration *prometheus.HistogramVec // route

	turnsMu sync.Mutex
	turnsW  turnWatch // under turnsMu (turn.go)
}

// Sources are live counts read at scrape time; any may be nil.
type Sources struct {
	Subscriptions func() int              // broker subscriptions
	Drops         func() map[string]int64 // broker drops by reason
	// HumanLoad counts tool calls waiting for an approval and sends
	// queued behind a running turn (a database read per scrape).
	HumanLoad func(ctx context.Context) (waiting, queued int, err error)
}

// NewMetrics makes the collectors and registers them with the Go runtime
// and process collectors.
func NewMetrics(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.turnsW = turnWatch{m: m, open: map[string]*openTurn{}}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_turns_total",
		Help: "Turns ended, by outcome (ok, error, interrupted)."}, []string{"outcome"})
	m.turnDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_turn_duration_seconds",
		Help: "Turn duration from turn_started to end, by outcome.", Buckets: durationBuckets}, []string{"outcome"})
	m.modelRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_model_requests_total",
		Help: "Model (chat completion) requests."}, []string{"model"})
	m.modelErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_model_errors_total",
		Help: "Model requests that failed, by error code (interrupted calls are not errors)."}, []string{"model", "code"})
	m.modelDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_model_request_duration_seconds",
		Help: "Model request duration, until the stream ended.", Buckets: durationBuckets}, []string{"model"})
	m.modelTTFT = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_model_time_to_first_token_seconds",
		Help: "Time from a model request to its first streamed delta.", Buckets: durationBuckets}, []string{"model"})
	m.modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_model_tokens_total",
		Help: "Tokens the model reported, by kind (prompt, completion)."}, []string{"model", "kind"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_tool_calls_total",
		Help: "Tool calls, by tool server and outcome (ok, error)."}, []string{"server", "outcome"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_tool_call_duration_seconds",
		Help: "Tool call duration, by tool server.", Buckets: durationBuckets}, []string{"server"})
	m.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentik_open_streams",
		Help: "Open client streams, by kind (ws: WebSocket connections, sse: SSE streams)."}, []string{"kind"})
	m.eventsAppended = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentik_events_appended_total",
		Help: "Events committed to the event log (as published by the store)."})
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentik_event_batch_size",
		Help: "Events per committed batch.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}})
	m.compactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentik_compactions_total",
		Help: "Compactions of working memory (summary messages committed), automatic and manual."})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_http_requests_total",
		Help: "HTTP requests, by route pattern and status."}, []string{"route", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_http_request_duration_seconds",
		Help:    "HTTP request duration by route pattern (streams: their lifetime).",
		Buckets: prometheus.DefBuckets}, []string{"route"})
	for _, c := range []prometheus.Collector{m.turns, m.turnDuration, m.modelRequests, m.modelErrors, m.modelDuration,
		m.modelTTFT, m.modelTokens, m.toolCalls, m.toolDuration, m.streams, m.eventsAppended, m.batchSize, m.compactions,
		m.httpRequests, m.httpDuration} {
		f(c)
	}
	// Both stream kinds show from the start, at 0.
	m.streams.WithLabelValues("ws")
	m.streams.WithLabelValues("sse")
	if src.Subscriptions != nil {
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentik_subscriptions",
			Help: "Live event subscriptions (WebSocket, SSE and internal)."},
			func() float64 { return float64(src.Subscriptions()) }))
	}
	if src.Drops != nil {
		f(dropCollector{src.Drops})
	}
	if src.HumanLoad != nil {
		f(humanCollector{src.HumanLoad})
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is where the collectors live (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Committed counts one batch of events this instance committed (the
// store's OnOwnCommit; on PostgreSQL the other instances' commits are
// theirs to count, so every family it feeds adds up across instances):
// the events appended to the log and the batch's size, and the turns it
// ends (turn.go). A temporary conversation's events (seq 0: kept in no
// log) count for their turns only.
func (m *Metrics) Committed(evs []agent.Encoded) {
	if n := stored(evs); n > 0 {
		m.eventsAppended.Add(float64(n))
		m.batchSize.Observe(float64(n))
	}
	m.countTurns(evs)
}

// stored counts the events of evs kept in the log (a seq).
func stored(evs []agent.Encoded) int {
	n := 0
	for i := range evs {
		if evs[i].Seq > 0 {
			n++
		}
	}
	return n
}

// Request implements server.Observer.
func (m *Metrics) Request(route string, status int, d time.Duration) {
	m.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(d.Seconds())
}

// StreamOpened implements server.Observer.
func (m *Metrics) StreamOpened(kind string) func() {
	g := m.streams.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// turnEnded records one ended turn.
func (m *Metrics) turnEnded(outcome string, d time.Duration, timed bool) {
	m.turns.WithLabelValues(outcome).Inc()
	if timed {
		m.turnDuration.WithLabelValues(outcome).Observe(d.Seconds())
	}
}

// dropCollector exposes the broker's drop counts at scrape time.
type dropCollector struct{ drops func() map[string]int64 }

var dropDesc = prometheus.NewDesc("agentik_broker_drops_total",
	"Subscriptions the broker ended or refused with a resync, by reason.", []string{"reason"}, nil)

func (dropCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dropDesc }

func (c dropCollector) Collect(ch chan<- prometheus.Metric) {
	for reason, n := range c.drops() {
		ch <- prometheus.MustNewConstMetric(dropDesc, prometheus.CounterValue, float64(n), reason)
	}
}

// humanCollector reads what waits for people at scrape time, from the
// database, so the gauges are right after a restart and across instances.
type humanCollector struct {
	load func(ctx context.Context) (waiting, queued int, err error)
}

var (
	waitingDesc = prometheus.NewDesc("agentik_approvals_waiting",
		"Tool calls waiting for an approval decision (stored conversations).", nil, nil)
	queuedDesc = prometheus.NewDesc("agentik_queued_sends",
		"Sends queued behind a running turn (stored conversations).", nil, nil)
)

// humanLoadTimeout bounds the scrape's database read.
const humanLoadTimeout = 2 * time.Second

func (humanCollector) Describe(ch chan<- *prometheus.Desc) { ch <- waitingDesc; ch <- queuedDesc }

func (c humanCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), humanLoadTimeout)
	defer cancel()
	waiting, queued, err := c.load(ctx)
	if err != nil {
		return // absent from this scrape; the database's state shows in /ready
	}
	ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(queued))
}
