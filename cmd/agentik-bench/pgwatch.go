package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgWatch is PostgreSQL's side of the instances scenario, for want of
// pg_stat_statements (it needs shared_preload_libraries, so a restart of a
// database others share): it maps each backend to the instance whose
// connection it serves (the client's port, found among the instance
// process's sockets), samples pg_stat_activity every pgSampleEvery (what
// each backend is doing: the statement and the wait event), and reads each
// backend's CPU time from /proc, as the instances' own. Its figures are
// average active sessions per (instance, connection, statement, wait),
// which is what pg_stat_statements' total time over the window would say.
type pgWatch struct {
	conn *pgx.Conn
	pids []int // the instances' processes, in order (1-based in reports)

	mu      sync.Mutex
	role    map[int]string // backend pid → "i1 pool", "i2 listener"…
	samples int
	tally   map[string]int
	cpu0    map[int]time.Duration // backend CPU when the window opened
	stop    context.CancelFunc
	done    chan struct{}
}

const pgSampleEvery = 20 * time.Millisecond

func newPGWatch(ctx context.Context, dsn string, pids []int) (*pgWatch, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &pgWatch{conn: conn, pids: pids, role: map[int]string{}, tally: map[string]int{}}, nil
}

// backends maps the backends serving the instances to their roles.
func (w *pgWatch) backends(ctx context.Context) (map[int]string, error) {
	ports := map[int]int{} // client port → instance (1-based)
	for i, pid := range w.pids {
		for _, p := range localPorts(pid) {
			ports[p] = i + 1
		}
	}
	rows, err := w.conn.Query(ctx, "SELECT pid, client_port, application_name FROM pg_stat_activity WHERE client_port IS NOT NULL AND pid <> pg_backend_pid()")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var (
			pid, port int
			app       string
		)
		if err := rows.Scan(&pid, &port, &app); err != nil {
			return nil, err
		}
		inst, ok := ports[port]
		if !ok {
			continue
		}
		kind := "pool"
		if app == "agentik-listener" {
			kind = "listener"
		}
		out[pid] = fmt.Sprintf("i%d %s", inst, kind)
	}
	return out, rows.Err()
}

// start opens the window: backend CPU times now, sampling from now on.
func (w *pgWatch) start(ctx context.Context) error {
	role, err := w.backends(ctx)
	if err != nil {
		return err
	}
	w.role, w.cpu0 = role, map[int]time.Duration{}
	for pid := range role {
		w.cpu0[pid], _ = cpuTime(pid)
	}
	sctx, cancel := context.WithCancel(ctx)
	w.stop, w.done = cancel, make(chan struct{})
	go w.sample(sctx)
	return nil
}

func (w *pgWatch) sample(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(pgSampleEvery)
	defer t.Stop()
	refresh := time.Now().Add(time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Now().After(refresh) {
			// The pools open connections under load: map the new ones.
			if role, err := w.backends(ctx); err == nil {
				w.mu.Lock()
				for pid, r := range role {
					if _, ok := w.role[pid]; !ok {
						w.role[pid] = r
					}
				}
				w.mu.Unlock()
			}
			refresh = time.Now().Add(time.Second)
		}
		rows, err := w.conn.Query(ctx, "SELECT pid, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), left(query, 200), CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) ELSE '{}' END FROM pg_stat_activity WHERE client_port IS NOT NULL AND pid <> pg_backend_pid()")
		if err != nil {
			return
		}
		w.mu.Lock()
		w.samples++
		for rows.Next() {
			var (
				pid                         int
				state, wtype, wevent, query string
				blockers                    []int32
			)
			if rows.Scan(&pid, &state, &wtype, &wevent, &query, &blockers) != nil {
				continue
			}
			role, ok := w.role[pid]
			if !ok || state == "idle" {
				continue // off the clock: waiting for its client
			}
			wait := "CPU"
			if wtype != "" {
				wait = wtype + ":" + wevent
			}
			if len(blockers) > 0 {
				// Whose lock: this run's backends, or another client of
				// the database (advisory locks are per database, not
				// per schema).
				by := "another client"
				if r, ok := w.role[int(blockers[0])]; ok {
					by = r
				}
				wait += " (held by " + by + ")"
			}
			w.tally[role+" | "+state+" | "+wait+" | "+statement(query)]++
		}
		w.mu.Unlock()
		rows.Close()
	}
}

// statement shortens a statement to what tells it apart.
func statement(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	switch {
	case strings.HasPrefix(q, "SELECT seq, id, kind, conversation_id"), strings.Contains(q, "FROM agent_event WHERE seq >"):
		return "catch-up read (" + trim(q, 60) + ")"
	case strings.HasPrefix(q, "INSERT INTO"):
		return trim(q, 40)
	}
	return trim(q, 70)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// pgFigures is what one window measured.
type pgFigures struct {
	samples int
	// aas: average active sessions per "role | state | wait | statement",
	// highest first.
	aas []pgShare
	// cpu: backend CPU per role over the window.
	cpu map[string]time.Duration
}

type pgShare struct {
	key string
	aas float64
}

// finish closes the window.
func (w *pgWatch) finish() pgFigures {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	f := pgFigures{samples: w.samples, cpu: map[string]time.Duration{}}
	for pid, role := range w.role {
		d, err := cpuTime(pid)
		if err != nil {
			continue // the backend ended
		}
		f.cpu[role] += d - w.cpu0[pid]
	}
	for k, n := range w.tally {
		f.aas = append(f.aas, pgShare{k, float64(n) / float64(max(1, w.samples))})
	}
	slices.SortFunc(f.aas, func(a, b pgShare) int { return cmp.Compare(b.aas, a.aas) })
	return f
}

func (w *pgWatch) close() { w.conn.Close(context.Background()) }

// localPorts are the local TCP ports of the sockets pid holds.
func localPorts(pid int) []int {
	inodes := map[string]bool{}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []int
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || !inodes[fs[9]] {
				continue
			}
			_, port, ok := strings.Cut(fs[1], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseInt(port, 16, 32); err == nil {
				out = append(out, int(p))
			}
		}
		f.Close()
	}
	return out
}
