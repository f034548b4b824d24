package tool

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Shutdown of a stdio server, as the MCP spec asks: close its stdin, then
// SIGTERM, then SIGKILL, to the whole process group.
const (
	stdinGrace = 1 * time.Second
	termGrace  = 2 * time.Second
	// drainGrace bounds the wait for stderr's end once the group is dead:
	// a process that left the group may still hold the pipe.
	drainGrace = 1 * time.Second
	// groupGrace bounds the wait for the killed group to be gone.
	groupGrace = 2 * time.Second
)

// stderrTail is how much of a server's recent stderr is kept for the error
// shown when it dies.
const stderrTail = 4 << 10

// cleanEnv is the environment of a stdio server: a few variables of ours
// that programs need to run, and the entry's own env. Nothing else of ours
// (OPENAI_API_KEY, …) reaches it.
func cleanEnv(getenv func(string) string, own map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LANG", "TERM"} {
		if _, ok := own[k]; ok {
			continue
		}
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(own) {
		env = append(env, k+"="+own[k])
	}
	return env
}

// lookPath finds a command on the PATH of the child's environment.
func lookPath(file string, env []string) (string, error) {
	if strings.ContainsRune(file, filepath.Separator) || strings.ContainsRune(file, '/') {
		return file, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: executable file not found in PATH", file)
}

// process is a running stdio server: the leader of its own process group,
// talked to over pipes that we own (not exec's copying goroutines, which
// would wait for grandchildren holding the pipes).
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end: write requests
	stdout *os.File // our end: read responses
	stderr *os.File // our end: drained into tail

	reaped  chan struct{} // closed once the leader is reaped
	exited  chan struct{} // closed once the leader is reaped and its group killed
	waitErr error         // set before exited closes
	drained chan struct{} // closed when stderr ends
	// awaitGroup, when set (tests), is called as exitError starts waiting
	// for exited.
	awaitGroup func()

	mu   sync.Mutex
	tail []byte
}

// startProcess starts sc's command in a new process group with a clean
// environment.
func startProcess(sc ServerConfig, getenv func(string) string, log *slog.Logger) (*process, error) {
	env := cleanEnv(getenv, sc.Env)
	path, err := lookPath(sc.Command, env)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, sc.Args...)
	cmd.Args[0] = sc.Command
	cmd.Env = env
	cmd.Dir = sc.Cwd
	newGroup(cmd)

	var files []*os.File // every end, closed on failure
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = os.Pipe()
		files = append(files, r, w)
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	if err == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		err = cmd.Start()
	}
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, fmt.Errorf("start %s: %w", sc.Command, err)
	}
	// The child has its ends now.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		cmd: cmd, stdin: inW, stdout: outR, stderr: errR,
		reaped: make(chan struct{}), exited: make(chan struct{}), drained: make(chan struct{}),
	}
	go p.wait()
	go p.drain(sc, log)
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// wait reaps the leader, then kills what is left of its group: a server
// whose leader died is dead, and an npx wrapper's node must not outlive it.
func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.reaped)
	_ = signalGroup(p.pid(), true)
	waitGroupGone(p.pid(), groupGrace)
	close(p.exited)
}

// drain keeps the last stderrTail bytes of stderr and logs its lines at
// debug level, secrets removed. It never stops reading while the pipe is
// open, so the server can never block on a full pipe.
func (p *process) drain(sc ServerConfig, log *slog.Logger) {
	defer close(p.drained)
	sc2 := bufio.NewScanner(p.stderr)
	sc2.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc2.Scan() {
		line := sc.redact(sc2.Text())
		log.Debug("mcp_server_stderr", "line", line)
		p.mu.Lock()
		p.tail = append(p.tail, line...)
		p.tail = append(p.tail, '\n')
		if over := len(p.tail) - stderrTail; over > 0 {
			p.tail = append(p.tail[:0], p.tail[over:]...)
		}
		p.mu.Unlock()
	}
	if sc2.Err() != nil {
		// A line longer than the buffer: keep draining without lines.
		buf := make([]byte, 32<<10)
		for {
			if _, err := p.stderr.Read(buf); err != nil {
				return
			}
		}
	}
}

// lastLine is the last non-empty line of stderr, for error messages.
func (p *process) lastLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(p.tail)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// exitError describes how the process ended, with its last stderr line.
func (p *process) exitError() error {
	if p.awaitGroup != nil {
		p.awaitGroup()
	}
	<-p.exited
	// Give the last words on stderr a moment to arrive.
	select {
	case <-p.drained:
	case <-time.After(100 * time.Millisecond):
	}
	err := p.waitErr
	if err == nil {
		err = errors.New("exited")
	} else {
		err = fmt.Errorf("exited: %w", err)
	}
	// After a normal exit, the last words on stderr usually say why; after
	// a signal they are whatever it printed last, often a banner.
	if line := p.lastLine(); line != "" && p.cmd.ProcessState != nil && p.cmd.ProcessState.Exited() {
		err = fmt.Errorf("%w: %s", err, line)
	}
	return err
}

// stop ends the process group: stdin closed, SIGTERM, SIGKILL, each after a
// grace period; it returns once the leader is reaped, the group killed and
// the pipes closed.
func (p *process) stop() {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(stdinGrace):
		_ = signalGroup(p.pid(), false)
		select {
		case <-p.exited:
		case <-time.After(termGrace):
			_ = signalGroup(p.pid(), true)
			<-p.exited
		}
	}
	select {
	case <-p.drained:
	case <-time.After(drainGrace):
		p.stderr.Close()
		<-p.drained
	}
	p.stderr.Close()
	p.stdout.Close()
}
