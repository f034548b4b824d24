package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// profileTop is how many functions a profile's summary names.
const profileTop = 12

// topEntry is one line of `go tool pprof -top`: a function and its share
// of the samples, flat (in itself) and cumulative (with its callees).
type topEntry struct {
	Func      string
	Flat, Cum float64 // % of the profile's samples
}

// parseTop reads the entries of `go tool pprof -top` output, at most n.
func parseTop(out string, n int) []topEntry {
	var es []topEntry
	header := false
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if !header {
			header = len(f) >= 5 && f[0] == "flat" && f[1] == "flat%"
			continue
		}
		if len(f) < 6 || len(es) >= n {
			continue
		}
		flat, err1 := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
		cum, err2 := strconv.ParseFloat(strings.TrimSuffix(f[4], "%"), 64)
		if err1 != nil || err2 != nil {
			continue
		}
		es = append(es, topEntry{Func: strings.Join(f[5:], " "), Flat: flat, Cum: cum})
	}
	return es
}

// summarizeProfile prints the server's top functions of the CPU profile
// at path (its samples labelled side=server) and records them as a row of
// scenario name: what a profiled scenario spent its CPU on, in the report
// beside its figures. what names whose samples they are (empty: the
// server's goroutines).
func (b *bench) summarizeProfile(ctx context.Context, name, what, path string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount", strconv.Itoa(profileTop), "-tagfocus", "side=server", path).CombinedOutput()
	if err != nil {
		b.progress("%s: pprof summary of %s: %v\n%s", name, path, err, out)
		return
	}
	es := parseTop(string(out), profileTop)
	b.progress("%s: the server's CPU profile (%s), top %d by flat time:\n%s", name, path, len(es), strings.TrimSpace(string(out)))
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%s %.1f%% (cum %.1f%%)", e.Func, e.Flat, e.Cum)
	}
	// Sorted by cumulative time, agentik's own functions say which path
	// the time went down (the flat list is mostly the runtime's).
	if cumOut, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount", "60", "-tagfocus", "side=server", path).CombinedOutput(); err == nil {
		var ours []string
		for _, e := range parseTop(string(cumOut), 60) {
			if strings.Contains(e.Func, "agentik/agentik/internal/") && len(ours) < 8 {
				ours = append(ours, fmt.Sprintf("%s %.1f%%", strings.TrimPrefix(e.Func, "github.com/agentik/agentik/internal/"), e.Cum))
			}
		}
		b.progress("%s: agentik's functions by cumulative time: %s", name, strings.Join(ours, "; "))
		parts = append(parts, "agentik's by cumulative time: "+strings.Join(ours, "; "))
	}
	if what == "" {
		what = "the server's goroutines"
	}
	flat := 0.0
	if len(es) > 0 {
		flat = es[0].Flat
	}
	b.add(Row{Scenario: name, Metric: "CPU profile: the hottest function's share of " + what, Unit: "%", Agentik: flat,
		Note: fmt.Sprintf("go tool pprof -top -tagfocus side=server %s: %s", path, strings.Join(parts, "; "))}, nil)
}
