package openai_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// statelessPost sends one stateless chat completion and reads it to the end.
func statelessPost(b *testing.B, url, body string) {
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
		b.Fatalf("status %d, %d bytes, %v", resp.StatusCode, n, err)
	}
}

// BenchmarkStatelessCompletion is one short stateless request after
// another (a temp conversation made, answered and deleted each time): the
// per-request cost of the stateless /v1 path. history is how many earlier
// messages the request carries (each seeds the temp conversation).
// cpu-ns/op is the process's CPU time (user and system, the fake model's
// server included) per request: on a loaded machine it moves far less than
// ns/op.
func BenchmarkStatelessCompletion(b *testing.B) {
	for _, history := range []int{1, 20} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			ts := newTestServer(b)
			var msgs []string
			for i := range history - 1 {
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":"earlier message %d of the history"}`, role, i))
			}
			msgs = append(msgs, `{"role":"user","content":"hello there"}`)
			body := `{"model":"fake","messages":[` + strings.Join(msgs, ",") + `]}`
			statelessPost(b, ts.URL, body) // warm up the connection and the runner
			b.ResetTimer()
			cpu0 := processCPU(b)
			for b.Loop() {
				statelessPost(b, ts.URL, body)
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkStatelessStream streams one long answer at full speed through a
// stateless request (the bench's facade row, smaller): tokens/s.
func BenchmarkStatelessStream(b *testing.B) {
	const tokens = 20000
	ts := newTestServer(b)
	body := fmt.Sprintf(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"[[tokens=%d]] go"}]}`, tokens)
	start := time.Now()
	for b.Loop() {
		statelessPost(b, ts.URL, body)
	}
	b.ReportMetric(float64(tokens*b.N)/time.Since(start).Seconds(), "tokens/s")
}

// processCPU is the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
