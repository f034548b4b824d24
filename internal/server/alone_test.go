package server_test

import (
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// aloneEnv names, in a child process of the test binary, the one test it
// runs.
const aloneEnv = "AGENTIK_TEST_ALONE"

// alone runs the test by itself in a child process of the test binary,
// where the checks that look at the whole process (leakCheck's goleak,
// runtime.ReadMemStats, runtime.NumGoroutine) see only this test: the
// parent runs it in parallel with the other tests and fails it with the
// child's output when the child fails. It returns true in the child,
// which goes on with the test's body, and false in the parent, which
// returns.
func alone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(aloneEnv) == t.Name() {
		return true
	}
	t.Parallel()
	args := []string{"-test.run=^" + t.Name() + "$", "-test.v", "-test.count=1"}
	for _, name := range []string{"test.timeout", "test.short", "test.gocoverdir"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != f.DefValue {
			args = append(args, "-"+name+"="+f.Value.String())
		}
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), aloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	// A child whose -test.run matched nothing passes: it must have run
	// the test.
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s alone in a child process: %v\n%s", t.Name(), err, out)
	}
	if testing.Verbose() {
		t.Logf("%s alone in a child process:\n%s", t.Name(), out)
	}
	return false
}
