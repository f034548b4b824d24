package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cpuTime is the CPU time a process has used: the sum over its threads of
// /proc/<pid>/task/<tid>/schedstat (nanoseconds; /proc/<pid>/stat counts
// 10 ms ticks, too coarse for short windows). Go threads do not exit, so
// no time is lost with them.
func cpuTime(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // the thread just exited
		}
		f, _, _ := strings.Cut(string(b), " ")
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time: parse %q: %w", b, err)
		}
		sum += time.Duration(n)
	}
	return sum, nil
}

// rss is a process's resident memory in bytes (VmRSS).
func rss(pid int) (int64, error) {
	m, err := residentOf(pid)
	return m.total, err
}

// resident is a process's resident memory in bytes, as /proc counts it:
// in all (VmRSS), and its parts, anonymous (RssAnon: the heap, stacks)
// and file-backed (RssFile: mapped files, such as the database SQLite
// reads through mmap, which the kernel may drop and read again).
type resident struct{ total, anon, file int64 }

func residentOf(pid int) (resident, error) {
	var m resident
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, fmt.Errorf("rss: %w", err)
	}
	found := false
	for line := range strings.Lines(string(b)) {
		name, v, ok := strings.Cut(line, ":")
		var into *int64
		switch name {
		case "VmRSS":
			into, found = &m.total, true
		case "RssAnon":
			into = &m.anon
		case "RssFile":
			into = &m.file
		}
		if !ok || into == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return m, fmt.Errorf("rss: parse %q: %w", line, err)
		}
		*into = kb << 10
	}
	if !found {
		return m, errors.New("rss: no VmRSS line")
	}
	return m, nil
}

// residentOfTarget is residentOf the process that serves t (this one
// when it runs in process); zero for a target of several processes.
func residentOfTarget(t target) resident {
	pid := pidOf(t)
	if pid == 0 {
		return resident{}
	}
	m, _ := residentOf(pid)
	return m
}

// pidOf is the process that serves t: its child, or this process when it
// runs in process; 0 for a target of several processes.
func pidOf(t target) int {
	switch t := t.(type) {
	case *proc:
		return t.cmd.Process.Pid
	case *inproc:
		return os.Getpid()
	}
	return 0
}

// target is a server under load: agentik or the bare baseline, in a child
// process (or, when profiling, in this one).
type target interface {
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL() string
	// CPU is the CPU time the server has used so far.
	CPU() time.Duration
	// RSS is the server's resident memory.
	RSS() int64
	// Close stops the server and waits for it.
	Close() error
}

// proc is a server in a child process.
type proc struct {
	name string
	url  string
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
	err  error // of Wait, once done is closed
}

func (p *proc) URL() string { return p.url }

// writeCalls is how many write system calls (syscw of /proc/<pid>/io) the
// server of t has made so far: agentik run in this process counts the
// load generator's too; 0 for a target of neither kind.
func writeCalls(t target) int64 {
	pid := pidOf(t)
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func (p *proc) CPU() time.Duration {
	d, err := cpuTime(p.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	return d
}

func (p *proc) RSS() int64 {
	n, err := rss(p.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	return n
}

// closeClientIdle closes the load generator's idle client connections
// (run sets it to its client's CloseIdleConnections). A server's graceful
// shutdown waits for a connection that never carried a request until
// net/http deems it idle, 5 s after it was made, and the client's
// transport keeps such spare connections when a dial loses the race to a
// connection freed meanwhile: closing them first spares each close 5 s.
var closeClientIdle = func() {}

// Close sends SIGTERM and waits (then SIGKILL after 10 s).
func (p *proc) Close() error {
	closeClientIdle()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s: killed after 10 s without exiting", p.name)
	}
	var ee *exec.ExitError
	if p.err != nil && !(errors.As(p.err, &ee) && !ee.Exited()) {
		return fmt.Errorf("%s: %w; its log:\n%s", p.name, p.err, p.log.tail())
	}
	return nil
}

// lockedBuffer keeps a child's output for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// startProc starts cmd and waits until GET url+health answers 200. When
// addrLine, the child prints "listening ADDR" first on stdout and the URL
// is taken from it.
func startProc(ctx context.Context, name string, cmd *exec.Cmd, url string, addrLine bool) (*proc, error) {
	p := &proc{name: name, url: url, cmd: cmd, log: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.log
	var stdout io.ReadCloser
	if addrLine {
		var err error
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
	} else {
		cmd.Stdout = p.log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if addrLine {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if err != nil || !ok {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("start %s: no address line (%q, %v); its log:\n%s", name, line, err, p.log.tail())
		}
		p.url = "http://" + addr
		go func() { _, _ = io.Copy(p.log, stdout) }() // ends with the child
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("start %s: exited: %v; its log:\n%s", name, p.err, p.log.tail())
		case <-ctx.Done():
			_ = p.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.Close()
			return nil, fmt.Errorf("start %s: not healthy after 30 s; its log:\n%s", name, p.log.tail())
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// buildAgentik builds ./cmd/agentik into dir, with -trimpath as
// cmd/agentik's TestMain and the Taskfile's go vet build it: in the test
// suite (TestTinyRun) the packages are then in the build cache and the
// build only links, instead of compiling the product a third time (on a
// cold cache, at load 20, that compile outlasted TestTinyRun's 4 minutes).
func buildAgentik(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "agentik")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "github.com/agentik/agentik/cmd/agentik")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build agentik (run from the repository, or pass -agentik): %w\n%s", err, out)
	}
	return bin, nil
}

// startAgentik runs the agentik binary on a fresh port with db, its model
// the fake at modelURL, and env added to its environment.
func startAgentik(ctx context.Context, bin, db, modelURL string, env ...string) (*proc, error) {
	return startAgentikOn(ctx, bin, "sqlite:"+db, filepath.Dir(db), modelURL, env...)
}

// startAgentikDSN starts agentik on a database URL (PostgreSQL).
func startAgentikDSN(ctx context.Context, bin, dsn, modelURL string, env ...string) (*proc, error) {
	return startAgentikOn(ctx, bin, dsn, os.TempDir(), modelURL, env...)
}

func startAgentikOn(ctx context.Context, bin, dsn, home, modelURL string, env ...string) (*proc, error) {
	// The port was free a moment ago: another process (a parallel test)
	// may take it first, and then agentik exits at its listen. It is
	// started again on another port, at most three times.
	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		p, err := startProc(ctx, "agentik", agentikCmd(bin, addr, dsn, home, modelURL, "warn", env...), "http://"+addr, false)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return p, err
		}
	}
}

// agentikCmd is the command that runs the agentik binary on addr and
// dsn, logging at level, with env added to its environment.
func agentikCmd(bin, addr, dsn, home, modelURL, level string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "--addr", addr, "--db", dsn, "--log-level", level)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"OPENAI_BASE_URL=" + modelURL, "OPENAI_MODEL=fake-model",
	}
	if m := os.Getenv("AGENTIK_STORE_MODE"); m != "" {
		cmd.Env = append(cmd.Env, "AGENTIK_STORE_MODE="+m) // the store's mode under measure (docs/store.md)
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// roleEnv selects the bare baseline server when this program runs itself.
const roleEnv = "AGENTIK_BENCH_ROLE"

// startBare runs this program again as the bare baseline server.
func startBare(ctx context.Context, modelURL string) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start bare: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), roleEnv + "=bare", "OPENAI_BASE_URL=" + modelURL}
	return startProc(ctx, "bare", cmd, "", true)
}

// machineLoad measures how busy the whole machine is between start and
// the call of the returned function, in percent of all cores.
func machineLoad() func() float64 {
	b0, t0, _ := machineCPU()
	return func() float64 {
		b1, t1, _ := machineCPU()
		if t1 <= t0 {
			return 0
		}
		return 100 * float64(b1-b0) / float64(t1-t0)
	}
}
