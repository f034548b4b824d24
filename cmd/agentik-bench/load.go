package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Load is the machine's 1-minute load average around one scenario: a
// figure measured while other work ran is not comparable with a quiet
// run, and the report says so.
type Load struct {
	Scenario string  `json:"scenario"`
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
	// Busy is set when the load before the scenario was above half the
	// cores: something else was running.
	Busy bool `json:"busy"`
}

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

// busy reports whether a load average before a scenario means the machine
// was not quiet.
func busy(before float64) bool { return before > float64(runtime.NumCPU())/2 }

// writeLoads prints the loads under the table, with a warning when any
// scenario ran on a busy machine.
func writeLoads(w io.Writer, loads []Load) {
	if len(loads) == 0 {
		return
	}
	var parts, busyOnes []string
	for _, l := range loads {
		parts = append(parts, fmt.Sprintf("%s %.2f→%.2f", l.Scenario, l.Before, l.After))
		if l.Busy {
			busyOnes = append(busyOnes, l.Scenario)
		}
	}
	fmt.Fprintf(w, "\nload average (1 min) before→after: %s\n", strings.Join(parts, ", "))
	if len(busyOnes) > 0 {
		fmt.Fprintf(w, "WARNING: the machine was busy (load above %d/2) during: %s; absolute figures are not comparable, ratios less so\n",
			runtime.NumCPU(), strings.Join(busyOnes, ", "))
	}
}
