// Package testwait is how a test waits for a condition that no event
// signals: a process's HTTP answer, a row another process writes, a state
// read through a public API. A test never waits for time to pass; where
// the code under test can signal (a channel, a hook, a subscription), the
// test waits on that instead, and uses this only for what is observable
// from outside.
//
// For re-checks the condition with a short backoff (1 ms doubling to
// 25 ms) until it holds, and fails the test with what it waited for once
// Timeout passed: a bound for a broken build, never a duration a passing
// run depends on, so it is generous for a loaded CI machine.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds every wait.
const Timeout = 60 * time.Second

// For waits until cond holds; what names the condition for the failure.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !until(cond) {
		t.Fatalf("timed out after %v waiting for %s", Timeout, what)
	}
}

// ForErr waits until cond returns nil, and fails with its last error.
func ForErr(t testing.TB, what string, cond func() error) {
	t.Helper()
	var last error
	if !until(func() bool { last = cond(); return last == nil }) {
		t.Fatalf("timed out after %v waiting for %s: %v", Timeout, what, last)
	}
}

func until(cond func() bool) bool {
	deadline := time.Now().Add(Timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 25*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}
