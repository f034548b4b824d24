package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/testwait"
)

func TestWriteLoadsWarnsWhenBusy(t *testing.T) {
	var quiet, loaded bytes.Buffer
	writeLoads(&quiet, []Load{{Scenario: "relay", Before: 1.9, After: 2.1, Others: 0.03, Seconds: 12.4}})
	writeLoads(&loaded, []Load{{Scenario: "relay", Before: 0.1}, {Scenario: "mix", Before: 0.2, After: 21, Others: 1.4, Busy: true}})
	if !strings.Contains(quiet.String(), "relay 12 s, 1.90→2.10 (others 0.03 cores)") || strings.Contains(quiet.String(), "WARNING") {
		t.Errorf("quiet: %q", quiet.String())
	}
	if !strings.Contains(loaded.String(), "WARNING") || !strings.Contains(loaded.String(), "during: mix (1.40 cores);") {
		t.Errorf("loaded: %q", loaded.String())
	}
}

// Every row of the table says whether its scenario ran on a busy machine.
func TestTableSaysBusy(t *testing.T) {
	var out bytes.Buffer
	writeTable(&out, Report{Rows: []Row{
		{Scenario: "mix", Metric: "quiet one", Others: 0.04},
		{Scenario: "fanout", Metric: "loaded one", Others: 1.3, Busy: true},
	}})
	lines := strings.Split(out.String(), "\n")
	var quiet, loaded string
	for _, l := range lines {
		if strings.Contains(l, "quiet one") {
			quiet = l
		}
		if strings.Contains(l, "loaded one") {
			loaded = l
		}
	}
	if !strings.Contains(out.String(), "| busy ") || !strings.Contains(quiet, "| no (0.04)") || !strings.Contains(loaded, "| **yes** (1.30)") {
		t.Errorf("table:\n%s", out.String())
	}
}

// The bench's own previous scenario raises the load average; only other
// processes' CPU makes a scenario busy.
func TestOthersCores(t *testing.T) {
	for _, c := range []struct {
		machine, tree int64
		wall          time.Duration
		want          float64
	}{
		{machine: 2000, tree: 2000, wall: 10 * time.Second, want: 0},    // both cores busy with the bench
		{machine: 2000, tree: 1000, wall: 10 * time.Second, want: 1},    // another core's worth
		{machine: 1000, tree: 1010, wall: 10 * time.Second, want: 0},    // tick rounding
		{machine: 50, tree: 0, wall: 0, want: 0},                        // no window
		{machine: 1030, tree: 1000, wall: 10 * time.Second, want: 0.03}, // daemons
	} {
		if got := othersCores(c.machine, c.tree, c.wall); fmt.Sprintf("%.3f", got) != fmt.Sprintf("%.3f", c.want) {
			t.Errorf("othersCores(%d, %d, %s) = %.3f, want %.3f", c.machine, c.tree, c.wall, got, c.want)
		}
	}
	if 0.03 > busyCores || 1 <= busyCores {
		t.Errorf("busyCores %.2f does not separate daemons (0.03) from a core of other work", busyCores)
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and a ')' of its own.
	line := "4242 (a b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 5 1 20 0 1 0 100 1000 10 18446744073709551615"
	ppid, ticks, ok := parseStat(line)
	if !ok || ppid != 17 || ticks != 7+3+5+1 {
		t.Errorf("parseStat = %d, %d, %v; want 17, 16, true", ppid, ticks, ok)
	}
	if c := commOf(line); c != "a b) c" {
		t.Errorf("commOf = %q", c)
	}
	if _, _, ok := parseStat("4242 (x) S 1"); ok {
		t.Error("a short line parsed")
	}
}

// treeTicks counts a child's CPU while it runs and after it is reaped, so
// the servers the bench starts are never counted as other processes.
func TestTreeTicksCountsChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Fatalf("the bench reads /proc: %v", err)
	}
	t0, ok := treeTicks()
	if !ok {
		t.Fatal("treeTicks: /proc unreadable")
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Wait until the child has used 20 ticks of its own (testwait's
	// backoff keeps this process's own CPU far below the child's).
	var child int64
	testwait.For(t, "the child to use 20 ticks", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		_, child, _ = parseStat(string(b))
		return child >= 20
	})
	t1, _ := treeTicks()
	if t1-t0 < child {
		t.Errorf("while the child runs: the tree used %d ticks, the child alone %d", t1-t0, child)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	t2, _ := treeTicks()
	if t2-t0 < child {
		t.Errorf("after the child is reaped: the tree used %d ticks, the child alone %d", t2-t0, child)
	}
}

// A process outside the tree counts when its command is named: the
// PostgreSQL server of the instances scenario.
func TestTreeTicksCountsNamedProcesses(t *testing.T) {
	// A busy loop that is not this process's child: the outer sh starts it
	// and exits, so it is reparented.
	out, err := exec.Command("sh", "-c", "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("kill", pid).Run() })
	var orphan int64
	testwait.For(t, "the orphan to use 20 ticks", func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		var ppid int64
		ppid, orphan, _ = parseStat(string(b))
		if ppid == int64(os.Getpid()) {
			t.Fatalf("sh %s is this process's child", pid)
		}
		return orphan >= 20
	})
	named, ok1 := treeTicks("sh")
	tree, ok2 := treeTicks()
	if !ok1 || !ok2 {
		t.Fatal("treeTicks: /proc unreadable")
	}
	if named-tree < orphan {
		t.Errorf("with sh named the count grew by %d ticks, the orphan alone used %d", named-tree, orphan)
	}
}
