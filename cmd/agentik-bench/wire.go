package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// wireRun is one answer's cost on the WebSocket.
type wireRun struct {
	bytes    int64   // WebSocket bytes, server to client, for the turn
	sseBytes int64   // what the fake's OpenAI stream took for the same answer
	deflated int64   // the same frames with permessage-deflate
	events   int     // append_text events
	early    float64 // server CPU µs per token, tokens 10–30 %
	late     float64 // server CPU µs per token, tokens 70–90 %
}

// wire: bytes on the WebSocket for a long answer streamed at a steady
// pace (one event per token, the costliest case), and the server's CPU
// per token late in the answer against early.
func (b *bench) wire(ctx context.Context) error {
	t, err := b.agentik(ctx, "wire.db")
	if err != nil {
		return err
	}
	defer t.Close()
	one := func(n int, delay time.Duration) (wireRun, error) {
		var r wireRun
		id, err := b.createConversation(ctx, t.URL(), "wire")
		if err != nil {
			return r, err
		}
		s := newSink(id, nil)
		cm := newCPUMarks(t, n)
		s.onTokens = cm.see
		ws, err := watchWS(ctx, wsURL(t.URL(), "/agentik/ws"), s)
		if err != nil {
			return r, err
		}
		defer ws.Close()
		ws.deflated = newDeflateCounter()
		if _, err := ws.subscribe(ctx, "conversation", id, -1); err != nil {
			return r, err
		}
		b0, z0 := ws.bytes.Load(), ws.deflated.n
		if _, err := sendTurn(ctx, ws, id, prompt(n, delay, id)); err != nil {
			return r, err
		}
		if err := wait(ctx, s.done, time.Duration(n)*delay*3+time.Minute, "wire end"); err != nil {
			return r, err
		}
		r.bytes = ws.bytes.Load() - b0
		r.deflated = ws.deflated.n - z0
		if s.text.String() != llmtest.Tokens(n) {
			return r, fmt.Errorf("wire: text differs")
		}
		r.sseBytes = b.fake.streamBytes(id)
		r.events = s.events
		r.early, r.late = cm.perToken()
		return r, nil
	}
	b.progress("wire: %d-token answer at %.0f tokens/s", b.sz.WireShort, float64(time.Second)/float64(b.sz.WireDelay))
	short, err := one(b.sz.WireShort, b.sz.WireDelay)
	if err != nil {
		return err
	}
	b.progress("wire: %d-token answer at %.0f tokens/s", b.sz.WireLong, float64(time.Second)/float64(b.sz.WireDelay))
	long, err := one(b.sz.WireLong, b.sz.WireDelay)
	if err != nil {
		return err
	}
	b.progress("wire: %d-token answer at full speed", b.sz.WireLong)
	fast, err := one(b.sz.WireLong, 0)
	if err != nil {
		return err
	}
	nl, ns := float64(b.sz.WireLong), float64(b.sz.WireShort)
	b.add(Row{Scenario: "wire", Metric: fmt.Sprintf("WebSocket bytes, %d-token answer at %.0f tokens/s", b.sz.WireLong, float64(time.Second)/float64(b.sz.WireDelay)), Unit: "MB", Bare: float64(long.sseBytes) / 1e6, Agentik: float64(long.bytes) / 1e6,
		Target: "≤ 1.5 MB", Note: fmt.Sprintf("bare: the model's own OpenAI SSE stream; %d events, %.0f B/token; with permessage-deflate these frames would take %.2f MB", long.events, float64(long.bytes)/nl, float64(long.deflated)/1e6)},
		func(r Row) bool { return r.Agentik <= 1.5 })
	b.add(Row{Scenario: "wire", Metric: fmt.Sprintf("WebSocket bytes, %d-token answer at full speed", b.sz.WireLong), Unit: "MB", Bare: float64(fast.sseBytes) / 1e6, Agentik: float64(fast.bytes) / 1e6,
		Target: "≤ 1.5 MB", Note: fmt.Sprintf("the runner coalesced the deltas into %d events", fast.events)},
		func(r Row) bool { return r.Agentik <= 1.5 })
	b.add(Row{Scenario: "wire", Metric: fmt.Sprintf("bytes per token, %d-token ÷ %d-token answer", b.sz.WireLong, b.sz.WireShort), Unit: "×",
		Bare: (float64(long.sseBytes) / nl) / (float64(short.sseBytes) / ns), Agentik: (float64(long.bytes) / nl) / (float64(short.bytes) / ns),
		Target: "linear (≈ 1)", Note: "1.00 is linear in length"}, func(r Row) bool { return r.Agentik <= 1.1 })
	b.add(Row{Scenario: "wire", Metric: fmt.Sprintf("server CPU per token, late (70–90 %%) ÷ early (10–30 %%), %d-token answer at %.0f tokens/s", b.sz.WireLong, float64(time.Second)/float64(b.sz.WireDelay)), Unit: "×", Agentik: long.late / long.early,
		Target: "≤ 1.2×", Note: fmt.Sprintf("early %.1f µs, late %.1f µs per token", long.early, long.late)}, func(r Row) bool { return r.Agentik <= 1.2 })
	return nil
}
