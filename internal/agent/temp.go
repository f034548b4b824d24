package agent

import "time"

// Defaults of the temp conversations' bounds.
const (
	TempIdleTimeout  = 30 * time.Minute // idle temp conversations are dropped after this
	TempSweepEvery   = time.Minute      // how often idle temp conversations are looked for
	DefaultTempCount = 1000             // temp conversations held at once
	DefaultTempBytes = 256 << 20        // bytes of content held by all temp conversations
	// DefaultTempApprovalWait bounds how long a temp conversation's tool
	// call waits for approval when Config.ApprovalTimeout is 0: a
	// stateless API request must not wait forever for a decision.
	DefaultTempApprovalWait = 10 * time.Minute
)

// TempConfig bounds the temp conversations. Zero values take the defaults.
type TempConfig struct {
	Idle     time.Duration // dropped after this long without a change
	MaxCount int           // at most this many at once
	MaxBytes int64         // at most this many bytes of messages and memory
	// SweepEvery is how often the owner of the sweep (package store: Store.SweepEvery) looks for idle ones.
	SweepEvery time.Duration
	// ApprovalWait bounds a temp conversation's wait for an approval when
	// Config.ApprovalTimeout is 0 (which, when set, bounds every
	// conversation's); the call is then denied as a timed-out one is.
	ApprovalWait time.Duration
}

// TempStore keeps the temp conversations (Config.Temps): a Store of its
// own, whose conversations live only while the process does and are
// never logged. Its events are published with seq 0, and its messages
// have seq 0; a Quiet record is applied and not published. It is bounded
// in count and bytes (TempConfig: a write past a bound is unavailable and
// changes nothing) and drops idle conversations. The database (package
// store, OpenTemp) implements it over the same rules as stored
// conversations, so everything a stored conversation can do (branches,
// compaction, queues, approvals, elicitations) a temp one can: it is the
// Brancher and the ElicitStore of its conversations (Runner.branchesOf).
type TempStore interface {
	Store
	Versioned
	OwnerLister
	Brancher
	ElicitStore
	// Has reports whether id is one of its conversations, reading nothing.
	Has(id string) bool
}
