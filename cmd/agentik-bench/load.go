package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Load is how busy the machine was around one scenario with work that is
// not the bench's: a figure measured while other work ran is not
// comparable with a quiet run, and the report says so.
type Load struct {
	Scenario string  `json:"scenario"`
	Before   float64 `json:"before"` // 1-minute load average; it includes the bench's previous scenario
	After    float64 `json:"after"`
	// Others is the CPU that processes outside the bench's own tree (this
	// process, the servers it started, their children) used during the
	// scenario, in cores on average; -1 where /proc cannot say.
	Others float64 `json:"others_cores"`
	// Busy is set when Others was above busyCores: something else ran.
	Busy bool `json:"busy"`
	// Seconds is how long the scenario took, setup included.
	Seconds float64 `json:"seconds"`
}

// busyCores is the average CPU of other processes above which a scenario
// is reported as run on a busy machine. An idle machine's daemons use a
// few hundredths of a core; one other compiler or test binary uses more
// than this.
const busyCores = 0.25

// loadAvg reads the 1-minute load average (-1 where it cannot be read).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b) + " x")[0], 64)
	if err != nil {
		return -1
	}
	return f
}

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// treeTicks is the CPU time, in clock ticks, that this process and every
// process under it have used, running or exited and reaped: each one's
// utime, stime, cutime and cstime (a reaped child's time is in its parent's
// cutime and cstime); and every process whose command is one of also (the
// PostgreSQL server a scenario drives is its work, not another's). ok is
// false where /proc cannot be read.
func treeTicks(also ...string) (ticks int64, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	type stat struct {
		ppid, ticks int64
		comm        string
	}
	procs := map[int64]stat{}
	for _, e := range ents {
		pid, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it just exited
		}
		ppid, t, ok := parseStat(string(b))
		if ok {
			procs[pid] = stat{ppid, t, commOf(string(b))}
		}
	}
	self := int64(os.Getpid())
	if _, found := procs[self]; !found {
		return 0, false
	}
	// A process is in the tree when following its parents reaches self.
	in := map[int64]bool{self: true}
	var under func(pid int64, depth int) bool
	under = func(pid int64, depth int) bool {
		if v, known := in[pid]; known {
			return v
		}
		p, found := procs[pid]
		v := found && depth < 64 && p.ppid != pid && under(p.ppid, depth+1)
		in[pid] = v
		return v
	}
	for pid, p := range procs {
		if under(pid, 0) || slices.Contains(also, p.comm) {
			ticks += p.ticks
		}
	}
	return ticks, true
}

// commOf is the command name of a /proc/PID/stat line (field 2, without
// its parentheses).
func commOf(line string) string {
	i, j := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if i < 0 || j < i {
		return ""
	}
	return line[i+1 : j]
}

// parseStat reads the parent pid and utime+stime+cutime+cstime of one
// /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from its last ')'.
func parseStat(line string) (ppid, ticks int64, ok bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3, the state
	if len(f) < 15 {
		return 0, 0, false
	}
	ppid, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	for _, s := range f[11:15] { // fields 14–17: utime stime cutime cstime
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks += n
	}
	return ppid, ticks, true
}

// otherCPU measures, from its call to the call of the function it returns,
// the CPU other processes than the bench's tree (and those named also)
// used, in cores on average (-1 where /proc cannot say).
func otherCPU(also ...string) func() float64 {
	m0, _, mok := machineCPU()
	t0, tok := treeTicks(also...)
	w0 := time.Now()
	return func() float64 {
		m1, _, mok1 := machineCPU()
		t1, tok1 := treeTicks(also...)
		if !mok || !tok || !mok1 || !tok1 {
			return -1
		}
		return othersCores(m1-m0, t1-t0, time.Since(w0))
	}
}

// othersCores is the machine's busy ticks less the tree's, over wall, in
// cores.
func othersCores(machine, tree int64, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return max(0, float64(machine-tree)/clockTicks/wall.Seconds())
}

// writeLoads prints the loads under the table, with a warning when any
// scenario ran on a busy machine.
func writeLoads(w io.Writer, loads []Load) {
	if len(loads) == 0 {
		return
	}
	var parts, busyOnes []string
	for _, l := range loads {
		part := fmt.Sprintf("%s %.0f s, %.2f→%.2f", l.Scenario, l.Seconds, l.Before, l.After)
		if l.Others >= 0 {
			part += fmt.Sprintf(" (others %.2f cores)", l.Others)
		}
		parts = append(parts, part)
		if l.Busy {
			busyOnes = append(busyOnes, fmt.Sprintf("%s (%.2f cores)", l.Scenario, l.Others))
		}
	}
	fmt.Fprintf(w, "\neach scenario's seconds, load average (1 min) before→after, and the CPU of processes outside the bench: %s\n", strings.Join(parts, ", "))
	if len(busyOnes) > 0 {
		fmt.Fprintf(w, "WARNING: the machine was busy (other processes used more than %.2f of its %d cores) during: %s; absolute figures are not comparable, ratios less so\n",
			busyCores, runtime.NumCPU(), strings.Join(busyOnes, ", "))
	}
}
