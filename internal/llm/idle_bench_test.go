//go:build unix

package llm

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkIdleTouch is what each read of a model's stream (one or more
// per token) spends keeping the idle timeout away: watch is idleWatch's
// touch, reset a timer's Reset per read (as before idleWatch). Both in
// one run, so the machine's load weighs on both alike; cpu-ns/op is the
// process's CPU time.
func BenchmarkIdleTouch(b *testing.B) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.Run("watch", func(b *testing.B) {
		w := watchIdle(time.Minute, func() {})
		defer w.stop()
		cpu0 := cpu()
		for range b.N {
			w.touch()
		}
		b.ReportMetric(float64((cpu()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("reset", func(b *testing.B) {
		t := time.AfterFunc(time.Minute, func() {})
		defer t.Stop()
		cpu0 := cpu()
		for range b.N {
			t.Reset(time.Minute)
		}
		b.ReportMetric(float64((cpu()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
