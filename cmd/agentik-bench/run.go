package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// sizes are the loads of one run.
type sizes struct {
	RelayTokens, RelayRounds int

	MixTurns, MixTokens int
	MixDelay            time.Duration // between tokens: 20 ms is 50 tokens/s
	// TelemetryRounds is how many mixes of MixTurns × TelemetryTokens the
	// telemetry scenario runs on each of its two processes (tracing off,
	// on), the two driven at once.
	TelemetryRounds, TelemetryTokens int

	// WallAnswers are the counts of answers at once the walltime scenario
	// measures, each answer WallTokens tokens WallDelay apart.
	WallAnswers []int
	WallTokens  int
	WallDelay   time.Duration

	FanoutSubs, FanoutTokens int
	FanoutDelay              time.Duration
	// PeopleRounds is how many times each of the people scenario's two
	// loads runs (an odd count: the median is a measured value).
	PeopleRounds int
	IdleConns    int
	IdleWindow   time.Duration // how long the idle connections are measured

	ReplayEvents, ReplayRounds int

	WireLong, WireShort int
	WireDelay           time.Duration

	RestConvs    int
	RestDuration time.Duration
	RestWorkers  int
	// StormClients drop at once after subscribing, miss a turn of
	// StormMissed tokens, and reconnect at once.
	StormClients, StormMissed int
	// InstanceSteps are the loads (turns at once) of the instances
	// scenario, in order, until delivery falls behind; each turn is
	// InstanceTokens tokens at FanoutDelay.
	InstanceSteps  []int
	InstanceTokens int
	// ColdStartEvents is the size of the coldstart scenario's filled
	// database (-coldstart-events sets it).
	ColdStartEvents int
	// The saturation scenario: SatTurns turns at once, each step about
	// SatSeconds long at one pace (tokens/s a turn); a search of at most
	// SatSteps steps a side from SatPace, up to SatMaxPace (paceSearch);
	// two instances (SatTwo) a step fewer, from the pace one instance held.
	SatTurns, SatPace, SatMaxPace, SatSteps int
	SatSeconds                              time.Duration
	SatTwo                                  bool
	// The connections scenario: ConnConns WebSocket connections over
	// ConnUsers users (-connections sets the count), then a turn of
	// ConnTokens tokens at FanoutDelay a user.
	ConnConns, ConnUsers, ConnTokens int
	// The knowledge scenario: a PDF of KnowPages pages ingested, then
	// KnowQueries searches at each count of KnowChunks chunks
	// (-knowledge-chunks sets them).
	KnowPages, KnowQueries int
	KnowChunks             []int
	// The soak (-run soak): SoakUsers users, each a conversation of turns
	// of SoakTokens tokens at MixDelay, for -soak-duration.
	SoakUsers, SoakTokens int
	// SoakSettle bounds the wait for the server's goroutines to come back
	// to their baseline after the soak: the model client's idle
	// keep-alive connections (two goroutines each) close after net/http's
	// 90 s.
	SoakSettle time.Duration
}

// The full run fits in five minutes on a 2-core machine (issue 54): the
// scenarios whose figure is a ratio of CPU or a median run the fewest
// rounds and the shortest phases that kept it steady in earlier runs
// (docs/BENCHMARKS.md).
var (
	fullSizes = sizes{
		RelayTokens: 100_000, RelayRounds: 3,
		MixTurns: 100, MixTokens: 500, MixDelay: 20 * time.Millisecond, TelemetryRounds: 2, TelemetryTokens: 250,
		WallAnswers: []int{1, 100}, WallTokens: 500, WallDelay: 20 * time.Millisecond,
		FanoutSubs: 1000, FanoutTokens: 200, FanoutDelay: 20 * time.Millisecond, PeopleRounds: 3, IdleConns: 5000, IdleWindow: 2 * time.Second,
		ReplayEvents: 100_000, ReplayRounds: 3,
		WireLong: 10_000, WireShort: 1000, WireDelay: time.Millisecond,
		RestConvs: 1000, RestDuration: 2 * time.Second, RestWorkers: 4,
		StormClients: 1000, StormMissed: 100,
		InstanceSteps: []int{50, 100, 200}, InstanceTokens: 60, ColdStartEvents: 200_000,
		SatTurns: 100, SatPace: 200, SatMaxPace: 3200, SatSteps: 4, SatSeconds: time.Second, SatTwo: true,
		ConnConns: 10_000, ConnUsers: 100, ConnTokens: 20,
		KnowPages: 1000, KnowQueries: 200, KnowChunks: []int{10_000},
		SoakUsers: 100, SoakTokens: 100, SoakSettle: 2 * time.Minute,
	}
	quickSizes = sizes{
		RelayTokens: 10_000, RelayRounds: 1,
		MixTurns: 30, MixTokens: 100, MixDelay: 20 * time.Millisecond, TelemetryRounds: 2, TelemetryTokens: 50,
		WallAnswers: []int{1, 20}, WallTokens: 50, WallDelay: 20 * time.Millisecond,
		FanoutSubs: 200, FanoutTokens: 50, FanoutDelay: 20 * time.Millisecond, PeopleRounds: 1, IdleConns: 500, IdleWindow: 500 * time.Millisecond,
		ReplayEvents: 20_000, ReplayRounds: 1,
		WireLong: 1000, WireShort: 100, WireDelay: time.Millisecond,
		RestConvs: 1000, RestDuration: 500 * time.Millisecond, RestWorkers: 4,
		StormClients: 500, StormMissed: 100,
		InstanceSteps: []int{20}, InstanceTokens: 50, ColdStartEvents: 20_000,
		SatTurns: 50, SatPace: 200, SatMaxPace: 3200, SatSteps: 2, SatSeconds: 500 * time.Millisecond,
		ConnConns: 500, ConnUsers: 20, ConnTokens: 20,
		KnowPages: 100, KnowQueries: 30, KnowChunks: []int{1000},
		SoakUsers: 20, SoakTokens: 50, SoakSettle: 2 * time.Minute,
	}
	tinySizes = sizes{
		RelayTokens: 300, RelayRounds: 1,
		MixTurns: 4, MixTokens: 20, MixDelay: 5 * time.Millisecond, TelemetryRounds: 1, TelemetryTokens: 20,
		WallAnswers: []int{1, 4}, WallTokens: 20, WallDelay: 5 * time.Millisecond,
		FanoutSubs: 5, FanoutTokens: 20, FanoutDelay: 5 * time.Millisecond, PeopleRounds: 1, IdleConns: 10, IdleWindow: 200 * time.Millisecond,
		ReplayEvents: 300, ReplayRounds: 1,
		WireLong: 200, WireShort: 20, WireDelay: time.Millisecond,
		RestConvs: 20, RestDuration: 200 * time.Millisecond, RestWorkers: 2,
		StormClients: 5, StormMissed: 10,
		InstanceSteps: []int{2}, InstanceTokens: 20, ColdStartEvents: 500,
		SatTurns: 2, SatPace: 100, SatMaxPace: 400, SatSteps: 2, SatSeconds: 100 * time.Millisecond, SatTwo: true,
		ConnConns: 12, ConnUsers: 3, ConnTokens: 5,
		KnowPages: 5, KnowQueries: 5, KnowChunks: []int{60},
		SoakUsers: 3, SoakTokens: 10, SoakSettle: 5 * time.Second,
	}
)

// scenarios in the order they run (protocols before facade: in a run
// with both, facade takes the rounds protocols ran for it).
var scenarios = []string{"relay", "protocols", "facade", "mix", "modes", "walltime", "telemetry", "fanout", "people", "idle", "connections", "replay", "member", "wire", "rest", "storm", "knowledge", "coldstart", "instances", "saturation", "soak"}

// onlyByName are the scenarios a run leaves out unless -run names them,
// even -run all (the same as the default run).
var onlyByName = []string{"soak"}

// defaultRun is the -run of a run that names none.
func defaultRun() string {
	var names []string
	for _, s := range scenarios {
		if !slices.Contains(onlyByName, s) {
			names = append(names, s)
		}
	}
	return strings.Join(names, ",")
}

// Row is one line of the result: a figure of agentik beside its bare
// baseline.
type Row struct {
	Scenario string  `json:"scenario"`
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit"`
	Bare     float64 `json:"bare"`
	Agentik  float64 `json:"agentik"`
	// Ratio is Agentik/Bare (0 when there is no baseline).
	Ratio  float64 `json:"ratio"`
	Target string  `json:"target,omitempty"`
	// Pass is whether the target is met; nil without a target.
	Pass *bool  `json:"pass,omitempty"`
	Note string `json:"note,omitempty"`
	// Busy is whether other processes than the bench's used more than
	// busyCores during the row's scenario (its Load): a busy row's
	// absolute figures are not comparable with a quiet run's.
	Busy bool `json:"busy"`
	// Others is that CPU, in cores on average (-1: /proc could not say).
	Others float64 `json:"others_cores"`
}

// Report is what -json writes.
type Report struct {
	Date     string        `json:"date"`
	Machine  string        `json:"machine"`
	Size     string        `json:"size"`
	Duration time.Duration `json:"duration_ns"`
	Rows     []Row         `json:"rows"`
	Loads    []Load        `json:"loads"` // how busy the machine was around each scenario
}

// bench is one run: the shared fake model, the agentik binary, the rows.
type bench struct {
	sz       sizes
	dir      string
	bin      string
	fake     *fake
	hc       *http.Client
	out      io.Writer // progress
	outMu    sync.Mutex
	start    time.Time
	rows     []Row
	inproc   bool   // run agentik in this process (profiling)
	profile  string // scenario to profile
	profOut  string
	traceOut string
	postgres string   // the instances scenario's database, and the knowledge scenario's PostgreSQL
	knowDBs  []string // the databases the knowledge scenario searches (-knowledge-db)
	// profInstance is the instance (1-based) that runs in this process
	// when the instances scenario is profiled; the others are binaries.
	profInstance int
	withRelay    bool // the instances scenario also runs the relay sketch
	connOverride int  // -connections
	soakFor      time.Duration
	coldEvents   int    // the coldstart scenario's filled database
	memOut       string // heap profile of the profiled scenario

	profiling  bool       // a CPU profile of the current scenario runs
	phaseFiles []*os.File // phase profiles, closed at the end of the run
	// summarized are the phase profiles summarized at the end of the
	// profiled scenario beside its own, and whose samples they are.
	summarized []struct{ what, path string }

	seeds map[string]seeded // the seeded databases of this run, by file
	// mixRuns are the mix scenario's measured runs, by side ("bare" or
	// the store's mode of its agentik): the modes scenario, next in a
	// default run, measures only the mode the mix did not.
	mixRuns map[string]loadResult
	// relayModes are the relay scenario's rounds in each store mode, run
	// for the modes scenario when the run has both (nil: not run).
	relayModes *relayModes
	// facadeRuns are the facade's rounds that the protocols scenario ran
	// for it when the run has both (nil: not run).
	facadeRuns *facadeRuns
	// measuredIn names, by index in rows, the scenario during which a
	// row of another scenario was measured (addFrom).
	measuredIn map[int]string
	want       map[string]bool // the scenarios of this run
}

func (b *bench) progress(format string, args ...any) {
	b.outMu.Lock() // two sides of a scenario may run at once (walltime)
	defer b.outMu.Unlock()
	fmt.Fprintf(b.out, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// addFrom records a row (as add) whose figures were all measured during
// scenario from, earlier in the run: it carries from's busy and
// others_cores, and its note says so (measuredNote).
func (b *bench) addFrom(from string, r Row, pass func(Row) bool) {
	r.Note = strings.TrimSpace(r.Note + "; " + measuredNote(from))
	b.add(r, pass)
	if b.measuredIn == nil {
		b.measuredIn = map[int]string{}
	}
	b.measuredIn[len(b.rows)-1] = from
}

// measuredNote is the note of a row measured during scenario from.
func measuredNote(from string) string {
	return fmt.Sprintf("measured in the %s scenario (its busy and others_cores)", from)
}

// add records a row; pass is evaluated only when target is set.
func (b *bench) add(r Row, pass func(Row) bool) {
	// A ratio of two zeros (a tiny run where the runner merged a whole
	// answer into one event) is not a figure: report 0 and no verdict.
	if !finite(r.Bare) || !finite(r.Agentik) {
		r.Bare, r.Agentik, pass = finiteOr0(r.Bare), finiteOr0(r.Agentik), nil
		r.Note = strings.TrimSpace(r.Note + " (not measurable at this size)")
	}
	if r.Bare != 0 {
		r.Ratio = r.Agentik / r.Bare
	}
	if pass != nil {
		ok := pass(r)
		r.Pass = &ok
	}
	b.rows = append(b.rows, r)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func finiteOr0(f float64) float64 {
	if finite(f) {
		return f
	}
	return 0
}

// agentik starts a fresh agentik on db (a file in the run's directory),
// with env (KEY=value) added to its environment.
func (b *bench) agentik(ctx context.Context, db string, env ...string) (target, error) {
	if b.inproc {
		return startInProc(ctx, "sqlite:"+filepath.Join(b.dir, db), b.fake.URL, env...)
	}
	return startAgentik(ctx, b.bin, filepath.Join(b.dir, db), b.fake.URL, env...)
}

// profiled runs fn under a CPU profile when name is the profiled scenario.
func (b *bench) profiled(name string, fn func() error) error {
	if b.profile != name || b.profOut == "" && b.traceOut == "" {
		return fn()
	}
	if b.traceOut != "" {
		f, err := os.Create(b.traceOut)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer b.progress("execution trace of %s written to %s", name, b.traceOut)
		defer trace.Stop()
		if b.profOut == "" {
			return fn()
		}
	}
	f, err := os.Create(b.profOut)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	b.profiling = true
	err = fn()
	b.profiling = false
	pprof.StopCPUProfile()
	f.Close()
	b.progress("cpu profile of %s written to %s (server goroutines carry the label side=server)", name, b.profOut)
	if err != nil {
		return err
	}
	what := ""
	if name == "instances" {
		what = b.instanceProfiled()
	}
	b.summarizeProfile(context.Background(), name, what, b.profOut)
	for _, ph := range b.summarized {
		b.summarizeProfile(context.Background(), name, ph.what, ph.path)
	}
	b.summarized = nil
	return nil
}

// instanceProfiled names the instance of several that runs in this
// process when one is profiled.
func (b *bench) instanceProfiled() string {
	return fmt.Sprintf("instance %d (in this process; 1 runs the turns, the others watch)", b.profInstance)
}

// heap writes the heap profile of scenario name, when it is the profiled
// one and -memprofile is set: the scenario calls it at the moment it
// measures.
func (b *bench) heap(name string) { b.heapTo(name, b.memOut) }

// heapTo is heap into the file path (a scenario that writes two: the
// soak's at the end of its warm-up, to compare with `pprof -base`).
func (b *bench) heapTo(name, path string) {
	if b.profile != name || b.memOut == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		f.Close()
	}
	if err != nil {
		b.progress("heap profile of %s: %v", name, err)
		return
	}
	b.progress("heap profile of %s written to %s", name, path)
}

// phase, while a scenario is being profiled, ends the CPU profile of its
// setup and starts a second one, of what follows only, next to the first
// (-cpuprofile's name with "."+name appended): the measured phase of a
// scenario whose setup costs more than it (storm) gets a profile of its
// own.
func (b *bench) phase(name string) {
	if !b.profiling {
		return
	}
	pprof.StopCPUProfile()
	path := b.profOut + "." + name
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		b.progress("cpu profile of phase %s: %v", name, err)
		return
	}
	b.phaseFiles = append(b.phaseFiles, f)
	b.progress("cpu profile of phase %s goes to %s", name, path)
}

// summarizedPhase starts phase name (see phase) and has its profile
// summarized in a row of its own at the end of the scenario, as the
// samples of what.
func (b *bench) summarizedPhase(name, what string) {
	if !b.profiling {
		return
	}
	b.phase(name)
	b.summarized = append(b.summarized, struct{ what, path string }{what, b.profOut + "." + name})
}

// run is the whole program; main only calls it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if getenv(roleEnv) == "bare" {
		return serveBare(ctx, getenv, stdout)
	}
	fs := flag.NewFlagSet("agentik-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "short run (under a minute) with smaller loads")
	size := fs.String("size", "", "full, quick or tiny (tiny is what the tests run)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file (- for stdout, instead of the table)")
	only := fs.String("run", defaultRun(), "comma-separated scenarios to run (all: every one but soak, which runs only when named)")
	bin := fs.String("agentik", "", "agentik binary to run (default: go build ./cmd/agentik into a temp dir)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the scenario named by -profile; agentik then runs in this process")
	memprofile := fs.String("memprofile", "", "write a heap profile at the measured moment of the scenario named by -profile (idle: while every connection is open); agentik then runs in this process")
	traceOut := fs.String("trace", "", "write an execution trace of the scenario named by -profile; agentik then runs in this process")
	profile := fs.String("profile", "relay", "scenario to profile with -cpuprofile or -trace")
	postgres := fs.String("postgres", defaultPostgres, "PostgreSQL for the instances and saturation scenarios (each run makes and drops a schema)")
	instSteps := fs.String("instance-steps", "", "comma-separated loads (turns at once) of the instances scenario, in place of the size's")
	relay := fs.Bool("relay", false, "the instances scenario also runs each count of instances over the experimental relay (internal/store/relay.go)")
	coldEvents := fs.Int("coldstart-events", 0, "events in the coldstart scenario's filled database, in place of the size's (issue 54 names 1,000,000)")
	conns := fs.Int("connections", 0, "WebSocket connections of the connections scenario, in place of the size's (issue 54 names 10,000)")
	knowDB := fs.String("knowledge-db", knowSQLite, "comma-separated databases the knowledge scenario searches: sqlite, postgres (-postgres; a fresh schema each, dropped after)")
	knowChunks := fs.String("knowledge-chunks", "", "comma-separated chunk counts the knowledge scenario searches, in place of the size's (issue 54 names 10000,100000)")
	soakFor := fs.Duration("soak-duration", 20*time.Minute, "how long the soak's load runs (-run soak)")
	profInstance := fs.Int("profile-instance", 2, "with -profile instances or saturation: the instance (1 runs the turns, 2 and up watch them) that runs in this process to be profiled")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; see -help", fs.Arg(0))
	}
	sizeName := "full"
	if *quick {
		sizeName = "quick"
	}
	if *size != "" {
		sizeName = *size
	}
	b := &bench{out: stderr, start: time.Now(), profile: *profile, profOut: *cpuprofile, traceOut: *traceOut, postgres: *postgres, memOut: *memprofile, profInstance: *profInstance, withRelay: *relay, connOverride: *conns, soakFor: *soakFor, inproc: *cpuprofile != "" || *traceOut != "" || *memprofile != ""}
	switch sizeName {
	case "full":
		b.sz = fullSizes
	case "quick":
		b.sz = quickSizes
	case "tiny":
		b.sz = tinySizes
	default:
		return fmt.Errorf("-size must be full, quick or tiny, got %q", sizeName)
	}
	if *instSteps != "" {
		b.sz.InstanceSteps = nil
		for _, f := range strings.Split(*instSteps, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("-instance-steps: %q is not a count of turns", f)
			}
			b.sz.InstanceSteps = append(b.sz.InstanceSteps, n)
		}
	}
	if *knowChunks != "" {
		b.sz.KnowChunks = nil
		for _, f := range strings.Split(*knowChunks, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("-knowledge-chunks: %q is not a count of chunks", f)
			}
			b.sz.KnowChunks = append(b.sz.KnowChunks, n)
		}
	}
	for _, f := range strings.Split(*knowDB, ",") {
		db := strings.TrimSpace(f)
		if db != knowSQLite && db != knowPostgres || slices.Contains(b.knowDBs, db) {
			return fmt.Errorf("-knowledge-db: %q is not sqlite or postgres, once each", f)
		}
		b.knowDBs = append(b.knowDBs, db)
	}
	if *soakFor <= 0 {
		return fmt.Errorf("-soak-duration must be above 0, got %s", *soakFor)
	}
	if *conns < 0 {
		return fmt.Errorf("-connections must be a count of connections, got %d", *conns)
	}
	b.coldEvents = b.sz.ColdStartEvents
	if *coldEvents > 0 {
		b.coldEvents = *coldEvents
	}
	want := map[string]bool{}
	if *only == "all" {
		var names []string
		for _, s := range scenarios {
			if !slices.Contains(onlyByName, s) {
				names = append(names, s)
			}
		}
		*only = strings.Join(names, ",")
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(scenarios, s) {
			return fmt.Errorf("-run: unknown scenario %q; known: %s", s, strings.Join(scenarios, ","))
		}
		want[s] = true
	}
	b.want = want

	dir, err := os.MkdirTemp("", "agentik-bench-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	b.dir = dir
	b.hc = newHTTPClient()
	defer b.hc.CloseIdleConnections()
	closeClientIdle = b.hc.CloseIdleConnections
	defer func() { closeClientIdle = func() {} }()
	defer func() {
		for _, f := range b.phaseFiles {
			f.Close()
		}
	}()
	if !b.inproc || want["instances"] || want["saturation"] || want["coldstart"] {
		// The load generator's clients share the cores with the server
		// they measure: collect their garbage a quarter as often (agentik,
		// a child process, keeps its defaults; in one process, for
		// profiling, both keep them).
		if !b.inproc {
			debug.SetGCPercent(400)
		}
		if *bin != "" {
			b.bin = *bin
		} else {
			b.progress("building agentik")
			if b.bin, err = buildAgentik(ctx, dir); err != nil {
				return err
			}
		}
	}
	if b.fake, err = startFake(); err != nil {
		return err
	}
	defer b.fake.Close()

	steps := map[string]func(context.Context) error{
		"relay": b.relay, "facade": b.facade, "protocols": b.protocols, "mix": b.mix, "modes": b.modes, "walltime": b.walltime, "telemetry": b.telemetry, "fanout": b.fanout, "people": b.people, "idle": b.idle,
		"replay": b.replay, "member": b.member, "wire": b.wire, "rest": b.rest, "storm": b.storm, "coldstart": b.coldstart, "instances": b.instances, "saturation": b.saturation,
		"connections": b.connections, "knowledge": b.knowledge, "soak": b.soak,
	}
	var loads []Load
	for _, name := range scenarios {
		if !want[name] {
			continue
		}
		var also []string
		if name == "instances" {
			also = []string{"postgres"} // its servers' work is the scenario's
		}
		before, others, t0, first := loadAvg(), otherCPU(also...), time.Now(), len(b.rows)
		b.progress("%s: start (load average %.2f)", name, before)
		if err := b.profiled(name, func() error { return steps[name](ctx) }); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		o := others()
		l := Load{Scenario: name, Before: before, After: loadAvg(), Others: o, Busy: o > busyCores, Seconds: time.Since(t0).Seconds()}
		loads = append(loads, l)
		for i := first; i < len(b.rows); i++ {
			src := l
			if from, ok := b.measuredIn[i]; ok {
				if j := slices.IndexFunc(loads, func(l Load) bool { return l.Scenario == from }); j >= 0 {
					src = loads[j]
				}
			}
			b.rows[i].Busy, b.rows[i].Others = src.Busy, src.Others
		}
		b.progress("%s: took %.1f s; others used %.2f cores%s", name, l.Seconds, o, map[bool]string{true: " (busy)"}[l.Busy])
	}

	rep := Report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(), Size: sizeName, Duration: time.Since(b.start), Rows: b.rows, Loads: loads}
	b.progress("done in %s", rep.Duration.Round(time.Second))
	if *jsonOut == "-" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeTable(stdout, rep)
	writeLoads(stdout, rep.Loads)
	if *jsonOut != "" {
		buf, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(buf, '\n'), 0o644); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

// machine describes where the run happened.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores, %s/%s, %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// writeTable prints the rows as a Markdown table.
func writeTable(w io.Writer, rep Report) {
	fmt.Fprintf(w, "agentik-bench (%s) on %s, %s, took %s\n\n", rep.Size, rep.Machine, rep.Date, rep.Duration.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| scenario\t| metric\t| unit\t| bare\t| agentik\t| ratio\t| target\t| ok\t| busy\t| note\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---:\t|---:\t|---:\t|---\t|---\t|---\t|---\t|")
	for _, r := range rep.Rows {
		ok := ""
		if r.Pass != nil {
			ok = "yes"
			if !*r.Pass {
				ok = "**no**"
			}
		}
		bare, ratio := "—", "—"
		if r.Bare != 0 {
			bare, ratio = num(r.Bare), fmt.Sprintf("%.2f×", r.Ratio)
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t|\n", r.Scenario, r.Metric, r.Unit, bare, num(r.Agentik), ratio, r.Target, ok, busyCell(r), r.Note)
	}
	tw.Flush()
}

// busyCell says whether a row's scenario ran on a busy machine, with the
// cores others used.
func busyCell(r Row) string {
	switch {
	case r.Others < 0:
		return "?"
	case r.Busy:
		return fmt.Sprintf("**yes** (%.2f)", r.Others)
	}
	return fmt.Sprintf("no (%.2f)", r.Others)
}

// num prints a figure with about three significant digits.
func num(x float64) string {
	a := math.Abs(x)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3f", x)
}

// newHTTPClient is the load generator's client: keep-alive connections
// without a per-host cap.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 10000, MaxIdleConnsPerHost: 10000}}
}
