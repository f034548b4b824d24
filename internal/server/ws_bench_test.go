//go:build unix

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// The WebSocket benchmarks compare agentik's endpoint with a bare
// coder/websocket broadcast (the chat example's shape: one buffered
// channel and one writer goroutine per subscriber, every write under a
// timeout) in the same run. Clients are the same code for both, in the
// same process, so CPU figures include the clients' share on both sides.
//
//	go test -run '^$' -bench BenchmarkWS -benchtime 1x ./internal/server

const benchClients = 1000

// bare is the baseline broadcast server.
type bare struct {
	mu   sync.Mutex
	subs map[chan []byte]struct{}
	wg   sync.WaitGroup
}

func (b *bare) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	b.wg.Add(1)
	defer b.wg.Done()
	ch := make(chan []byte, 512)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	defer func() { b.mu.Lock(); delete(b.subs, ch); b.mu.Unlock() }()
	ctx := c.CloseRead(r.Context())
	for {
		select {
		case m := <-ch:
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.Write(wctx, websocket.MessageText, m)
			cancel()
			if err != nil {
				return
			}
		case <-ctx.Done():
			_ = c.CloseNow()
			return
		}
	}
}

func (b *bare) publish(m []byte) {
	b.mu.Lock()
	for ch := range b.subs {
		select {
		case ch <- m:
		default: // slow: dropped message (the pacing below avoids it)
		}
	}
	b.mu.Unlock()
}

func (b *bare) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// benchClient reads frames and records when timestamped events arrive.
type benchClient struct {
	c    *websocket.Conn
	got  atomic.Int64
	lat  []time.Duration // owned by the reader until done
	done chan struct{}
}

var tsMarker = []byte(`"text":"T`)

func (bc *benchClient) read() {
	defer close(bc.done)
	for {
		_, b, err := bc.c.Read(context.Background())
		if err != nil {
			return
		}
		if i := bytes.Index(b, tsMarker); i >= 0 {
			rest := b[i+len(tsMarker):]
			j := bytes.IndexByte(rest, '"')
			if ns, err := strconv.ParseInt(string(rest[:max(j, 0)]), 10, 64); err == nil && ns > 0 {
				bc.lat = append(bc.lat, time.Since(time.Unix(0, ns)))
			}
		}
		bc.got.Add(1)
	}
}

func dialBench(b testing.TB, url string, n int, subscribe bool) []*benchClient {
	b.Helper()
	out := make([]*benchClient, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.Dial(context.Background(), url, nil)
			if err != nil {
				b.Error(err)
				return
			}
			c.SetReadLimit(-1)
			if subscribe {
				_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"op":"subscribe","id":"1","stream":"all"}`))
				if _, _, err := c.Read(context.Background()); err != nil {
					b.Error(err)
					return
				}
			}
			bc := &benchClient{c: c, done: make(chan struct{})}
			out[i] = bc
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	for _, bc := range out {
		go bc.read()
	}
	return out
}

func closeBench(cs []*benchClient) {
	for _, bc := range cs {
		_ = bc.c.CloseNow()
	}
	for _, bc := range cs {
		<-bc.done
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func total(cs []*benchClient) int64 {
	var n int64
	for _, bc := range cs {
		n += bc.got.Load()
	}
	return n
}

func p99(cs []*benchClient) time.Duration {
	var all []time.Duration
	for _, bc := range cs {
		all = append(all, bc.lat...)
	}
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	return all[len(all)*99/100]
}

// eventJSON is the AllEvent a bare broadcast sends: what agentik would.
func eventJSON(convID string, seq int64, text string) []byte {
	b, _ := json.Marshal(agent.AllEvent{Kind: agent.KindConversation, Seq: seq, ID: agent.NewID(), Date: time.Now(), ConversationID: convID, Event: &agent.Event{Type: agent.EventAppendText, Text: text}})
	return b
}

// paced publishes n events at rate per second; publish gets the event's
// timestamped text.
func paced(n int, rate float64, publish func(i int, text string)) {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for i := range n {
		<-t.C
		publish(i, "T"+strconv.FormatInt(time.Now().UnixNano(), 10))
	}
}

// waitDelivered waits until every client has want events.
func waitDelivered(cs []*benchClient, want int64) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if total(cs) >= want*int64(len(cs)) {
			return
		}
	}
}

type fanoutResult struct {
	cpuPerDelivery time.Duration
	p99            time.Duration
	deliveries     int64
}

// BenchmarkWSFanout50PerSecond: 1000 subscribed clients, 50 events/s for
// 10 s; agentik's events go through the store (commit, then publish).
func BenchmarkWSFanout50PerSecond(b *testing.B) {
	const events, rate = 500, 50
	for range b.N {
		ts := newTestServer(b)
		conv, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		run := func(url string, subscribe bool, publish func(i int, text string)) fanoutResult {
			cs := dialBench(b, url, benchClients, subscribe)
			defer closeBench(cs)
			runtime.GC()
			start := cpuTime()
			paced(events, rate, publish)
			waitDelivered(cs, events)
			cpu := cpuTime() - start
			d := total(cs)
			return fanoutResult{cpu / time.Duration(max(d, 1)), p99(cs), d}
		}
		agentik := run(ts.wsURL(), true, func(i int, text string) {
			ev := agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: conv.ID, Event: &agent.Event{Type: agent.EventAppendText, Text: text}}
			if err := ts.Store.Append(context.Background(), &agent.Record{Event: ev}); err != nil {
				b.Error(err)
			}
		})
		bs := &bare{subs: map[chan []byte]struct{}{}}
		hs := httptest.NewServer(bs)
		base := run("ws"+strings.TrimPrefix(hs.URL, "http"), false, func(i int, text string) {
			bs.publish(eventJSON(conv.ID, int64(i+1), text))
		})
		hs.Close()
		bs.wg.Wait()
		b.ReportMetric(float64(agentik.cpuPerDelivery.Nanoseconds()), "agentik-cpu-ns/delivery")
		b.ReportMetric(float64(base.cpuPerDelivery.Nanoseconds()), "bare-cpu-ns/delivery")
		b.ReportMetric(float64(agentik.cpuPerDelivery)/float64(base.cpuPerDelivery), "cpu-ratio")
		b.ReportMetric(float64(agentik.p99.Microseconds())/1000, "agentik-p99-ms")
		b.ReportMetric(float64(base.p99.Microseconds())/1000, "bare-p99-ms")
		b.ReportMetric(float64(agentik.deliveries), "agentik-deliveries")
		b.ReportMetric(float64(base.deliveries), "bare-deliveries")
	}
}

// BenchmarkWSFanoutSaturated: 1000 clients; events are published as fast
// as the slowest client keeps within a window of 256 events (no drops), for
// 5 s; agentik's events go straight to the broker.
func BenchmarkWSFanoutSaturated(b *testing.B) {
	const window, dur = 256, 5 * time.Second
	for range b.N {
		ts := newTestServer(b)
		run := func(url string, subscribe bool, publish func(i int)) float64 {
			cs := dialBench(b, url, benchClients, subscribe)
			defer closeBench(cs)
			start := time.Now()
			i := 0
			for time.Since(start) < dur {
				minGot := int64(1 << 62)
				for _, bc := range cs {
					minGot = min(minGot, bc.got.Load())
				}
				for int64(i) < minGot+window && i%64 != 63 {
					publish(i)
					i++
				}
				if int64(i) >= minGot+window {
					time.Sleep(50 * time.Microsecond)
				} else {
					publish(i)
					i++
				}
			}
			return float64(total(cs)) / time.Since(start).Seconds()
		}
		msg := func(i int) []byte { return eventJSON("c", 0, "x"+strconv.Itoa(i)) }
		agentik := run(ts.wsURL(), true, func(i int) {
			var ev agent.AllEvent
			_ = json.Unmarshal(msg(i), &ev)
			ts.Broker.Publish(ev)
		})
		bs := &bare{subs: map[chan []byte]struct{}{}}
		hs := httptest.NewServer(bs)
		base := run("ws"+strings.TrimPrefix(hs.URL, "http"), false, func(i int) { bs.publish(msg(i)) })
		hs.Close()
		bs.wg.Wait()
		b.ReportMetric(agentik, "agentik-deliveries/s")
		b.ReportMetric(base, "bare-deliveries/s")
		b.ReportMetric(agentik/base, "ratio")
	}
}

// BenchmarkWSIdleMemory: bytes of heap and stack per idle subscribed
// connection on the server side. The clients run in a child process (this
// test binary running TestWSIdleClientsHelper), so only the server's
// share is counted; the bare figure is for comparison.
func BenchmarkWSIdleMemory(b *testing.B) {
	// measure returns the heap and the stack bytes per connection.
	measure := func(url string, subscribe bool, connected func() int) (heap, stack float64) {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cmd := exec.Command(os.Args[0], "-test.run=^TestWSIdleClientsHelper$")
		cmd.Env = append(os.Environ(), "AGENTIK_WS_HELPER_URL="+url, "AGENTIK_WS_HELPER_SUBSCRIBE="+strconv.FormatBool(subscribe))
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		for connected() < benchClients {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		for range 4 { // an idle server collects now and then; that shrinks stacks
			runtime.GC()
		}
		runtime.ReadMemStats(&m1)
		stdin.Close()
		_ = cmd.Wait()
		return (float64(m1.HeapInuse) - float64(m0.HeapInuse)) / benchClients, (float64(m1.StackInuse) - float64(m0.StackInuse)) / benchClients
	}
	for range b.N {
		ts := newTestServer(b)
		heapAgentik, stackAgentik := measure(ts.wsURL(), true, ts.Broker.Subscribers)
		bs := &bare{subs: map[chan []byte]struct{}{}}
		hs := httptest.NewServer(bs)
		heapBare, stackBare := measure("ws"+strings.TrimPrefix(hs.URL, "http"), false, bs.count)
		hs.Close()
		bs.wg.Wait()
		b.ReportMetric((heapAgentik+stackAgentik)/1024, "agentik-KB/conn")
		b.ReportMetric(heapAgentik/1024, "agentik-heap-KB/conn")
		b.ReportMetric(stackAgentik/1024, "agentik-stack-KB/conn")
		b.ReportMetric((heapBare+stackBare)/1024, "bare-KB/conn")
		b.ReportMetric(stackBare/1024, "bare-stack-KB/conn")
	}
}

// TestWSIdleClientsHelper is the client process of BenchmarkWSIdleMemory.
func TestWSIdleClientsHelper(t *testing.T) {
	url := os.Getenv("AGENTIK_WS_HELPER_URL")
	if url == "" {
		t.Skip("run by BenchmarkWSIdleMemory")
	}
	cs := dialBench(t, url, benchClients, os.Getenv("AGENTIK_WS_HELPER_SUBSCRIBE") == "true")
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	closeBench(cs)
}

// BenchmarkWSReplay100k: subscribe with after=0 to a log of 100k events
// and read until caught_up.
func BenchmarkWSReplay100k(b *testing.B) {
	const n = 100_000
	ts := newTestServer(b)
	conv, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 1000 {
		recs := make([]*agent.Record, 1000)
		for j := range recs {
			ev := agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: conv.ID, Event: &agent.Event{Type: agent.EventAppendText, Text: fmt.Sprintf("token %d ", i+j)}}
			recs[j] = &agent.Record{Event: ev}
		}
		if err := ts.Store.Append(context.Background(), recs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		c, _, err := websocket.Dial(context.Background(), ts.wsURL(), nil)
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(-1)
		start := time.Now()
		_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"op":"subscribe","id":"1","stream":"all","after":0}`))
		events := 0
		for {
			_, m, err := c.Read(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasPrefix(m, []byte(`{"type":"event"`)) {
				events++
			}
			if bytes.HasPrefix(m, []byte(`{"type":"caught_up"`)) {
				break
			}
		}
		el := time.Since(start)
		_ = c.Close(websocket.StatusNormalClosure, "")
		if events < n {
			b.Fatalf("replayed %d events", events)
		}
		b.ReportMetric(el.Seconds(), "s/replay")
	}
	_ = server.WSReadLimit
}
