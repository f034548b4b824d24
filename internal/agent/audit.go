package agent

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// The audit log (DESIGN.md §12.3, §12.5): who did what to what, when and
// from where, for sign-ins (and failed ones), keys, users and roles,
// password accounts, approval decisions, exports, agent changes, groups,
// shares, and admins' reads of other users' conversations. Each
// entry carries the hash of the one before it (a hash chain), so that an
// export can be checked offline by anyone (VerifyAudit, `agentik audit
// verify`): an entry edited, removed or moved breaks the chain there. The
// log is kept apart from the event log and its TTL (AGENTIK_AUDIT_TTL).

// Audit actions.
const (
	AuditSignIn         = "sign_in"
	AuditSignInFailed   = "sign_in_failed"
	AuditSignUp         = "sign_up"
	AuditInvite         = "invite_created"
	AuditUserCreated    = "user_created"
	AuditUserUpdated    = "user_updated"
	AuditUserDeleted    = "user_deleted"
	AuditKeyCreated     = "key_created"
	AuditKeyRevoked     = "key_revoked"
	AuditPasswordChange = "password_changed"
	AuditResetLink      = "reset_link_created"
	AuditPasswordReset  = "password_reset"
	AuditApproval       = "approval_decided"
	AuditAgentCreated   = "agent_created"
	AuditAgentUpdated   = "agent_updated"
	AuditAgentDeleted   = "agent_deleted"
	AuditExport         = "export"
	AuditShareCreated   = "share_created"
	AuditShareRevoked   = "share_revoked"
	AuditGroupCreated   = "group_created"
	AuditGroupRenamed   = "group_renamed"
	AuditGroupDeleted   = "group_deleted"
	AuditGroupMembers   = "group_members_changed"
	AuditGroupSynced    = "group_memberships_synced" // a sign-in's groups claim
	// AuditAdminRead is an admin's read of another user's conversation
	// (its messages: the history, the chat page); target is the
	// conversation, details name its owner.
	AuditAdminRead = "admin_read"
	// AuditAdminWrite is an admin's message into another user's
	// conversation, acting as admin (actas.go); details name the owner
	// and the message.
	AuditAdminWrite = "admin_write"
)

// Origin is where a request came from: the client's address and the
// protocol or surface it used (rest, ws, page, openai, a2a, mcp…).
type Origin struct {
	Address  string `json:"address,omitempty"`
	Protocol string `json:"protocol,omitempty"`
}

type originKey struct{}

// WithOrigin returns ctx carrying o (the server's middleware sets it).
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom is the origin ctx carries; zero for the process's own work.
func OriginFrom(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

// AuditEntry is one entry of the audit log. Hash is the SHA-256 (hex) of
// the entry's JSON without hash (AuditEntry.Sum), whose prev_hash is the
// hash of the entry before ("" for the first ever).
type AuditEntry struct {
	Seq      int64           `json:"seq"`
	At       time.Time       `json:"at"`
	Actor    string          `json:"actor"` // a user id; "" for nobody signed in
	Action   string          `json:"action"`
	Target   string          `json:"target"`
	From     Origin          `json:"from"`
	Details  json.RawMessage `json:"details,omitempty"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// Sum is the hash e must carry: SHA-256 over its JSON with hash left out
// (fields in their declared order; details compacted).
func (e AuditEntry) Sum() string {
	e.Hash = ""
	e.At = e.At.UTC()
	b, _ := json.Marshal(struct {
		Seq      int64           `json:"seq"`
		At       time.Time       `json:"at"`
		Actor    string          `json:"actor"`
		Action   string          `json:"action"`
		Target   string          `json:"target"`
		From     Origin          `json:"from"`
		Details  json.RawMessage `json:"details,omitempty"`
		PrevHash string          `json:"prev_hash"`
	}{e.Seq, e.At, e.Actor, e.Action, e.Target, e.From, e.Details, e.PrevHash})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// AuditQuery selects entries: by actor and action, between From and To,
// after a seq (paging), at most Limit.
type AuditQuery struct {
	Actor  string
	Action string
	From   time.Time // zero: from the first
	To     time.Time // zero: to the last (exclusive)
	After  int64
	Limit  int
}

// MaxAuditPage is the most entries one page holds.
const MaxAuditPage = 1000

// AuditStore keeps the audit log (the database, package store,
// implements it).
type AuditStore interface {
	// AppendAudit gives e the next seq and the previous entry's hash, sets
	// its hash (AuditEntry.Sum) and keeps it: one chain across instances.
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// AuditEntries returns the entries q selects in seq order.
	AuditEntries(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// PruneAudit deletes the entries made before t; the rest still
	// verify (the first one's prev_hash is taken as given).
	PruneAudit(ctx context.Context, before time.Time) (int64, error)
}

// Audit records and reads the audit log. A nil *Audit records nothing.
type Audit struct {
	st  AuditStore
	now Clock
	log *slog.Logger
}

// NewAudit makes an Audit over st.
func NewAudit(st AuditStore, now Clock, log *slog.Logger) *Audit {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Audit{st: st, now: now, log: log}
}

// Record appends an entry by ctx's principal (actor "" when nobody is
// signed in, such as a failed sign-in) from ctx's origin. It is called
// after the change it records succeeded; a failure to record is logged
// (audit_write_failed) and does not undo the change.
func (a *Audit) Record(ctx context.Context, action, target string, details any) {
	actor := ""
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		actor = p.UserID
	}
	a.RecordAs(ctx, actor, action, target, details)
}

// RecordAs is Record with the actor named (a sign-in's user).
func (a *Audit) RecordAs(ctx context.Context, actor, action, target string, details any) {
	if a == nil {
		return
	}
	e := AuditEntry{At: a.now().UTC().Truncate(time.Microsecond), Actor: actor, Action: action, Target: target, From: OriginFrom(ctx)}
	if details != nil {
		b, err := json.Marshal(details)
		if err == nil && string(b) != "null" && string(b) != "{}" {
			e.Details = b
		}
	}
	if _, err := a.st.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("audit_write_failed", "action", action, "err", err)
	}
}

// MayRead says whether ctx's principal may read the log: admins only.
func (a *Audit) MayRead(ctx context.Context) error {
	if a == nil {
		return Errorf(CodeUnavailable, "this server keeps no audit log")
	}
	if !PrincipalFrom(ctx).Admin() {
		return errAdminOnly()
	}
	return nil
}

// Entries returns a page of the log (admin only), and the seq to ask
// after for the next page (0 when this is the last).
func (a *Audit) Entries(ctx context.Context, q AuditQuery) ([]AuditEntry, int64, error) {
	if err := a.MayRead(ctx); err != nil {
		return nil, 0, err
	}
	if q.Limit <= 0 || q.Limit > MaxAuditPage {
		q.Limit = min(max(q.Limit, 0), MaxAuditPage)
		if q.Limit == 0 {
			q.Limit = 100
		}
	}
	es, err := a.st.AuditEntries(ctx, AuditQuery{Actor: q.Actor, Action: q.Action, From: q.From, To: q.To, After: q.After, Limit: q.Limit + 1})
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(es) > q.Limit {
		es = es[:q.Limit]
		next = es[len(es)-1].Seq
	}
	return es, next, nil
}

// Export writes the whole log (admin only), oldest first, as JSON Lines
// to w, a page at a time; the export itself is recorded first.
func (a *Audit) Export(ctx context.Context, w io.Writer) error {
	if err := a.MayRead(ctx); err != nil {
		return err
	}
	a.Record(ctx, AuditExport, "audit", nil)
	enc := json.NewEncoder(w)
	var after int64
	for {
		es, err := a.st.AuditEntries(ctx, AuditQuery{After: after, Limit: MaxAuditPage})
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		if len(es) < MaxAuditPage {
			return nil
		}
		after = es[len(es)-1].Seq
	}
}

// Prune deletes the entries older than ttl (AGENTIK_AUDIT_TTL; 0 keeps
// them forever).
func (a *Audit) Prune(ctx context.Context, ttl time.Duration) (int64, error) {
	if a == nil || ttl <= 0 {
		return 0, nil
	}
	return a.st.PruneAudit(ctx, a.now().Add(-ttl))
}

// AuditReport is what VerifyAudit found in a good export.
type AuditReport struct {
	Entries   int
	First     int64  // the first entry's seq
	Last      int64  // the last one's
	FirstPrev string // the first entry's prev_hash ("" when the log was never pruned)
	Head      string // the last entry's hash: compare it with the server's
}

// VerifyAudit checks an export (JSON Lines, oldest first): every entry's
// hash is its content's, its prev_hash is the hash of the line before, and
// its seq follows that line's. The error names the first entry that was
// altered, removed or moved, with its line.
func VerifyAudit(r io.Reader) (AuditReport, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var rep AuditReport
	var prev AuditEntry
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return rep, fmt.Errorf("line %d: not an audit entry: %v", line, err)
		}
		if e.Hash != e.Sum() {
			return rep, fmt.Errorf("line %d: entry %d was altered: its hash does not match its content", line, e.Seq)
		}
		if rep.Entries > 0 {
			switch {
			case e.Seq <= prev.Seq:
				return rep, fmt.Errorf("line %d: entry %d is out of order: it comes after entry %d", line, e.Seq, prev.Seq)
			case e.Seq > prev.Seq+1:
				return rep, fmt.Errorf("line %d: entry %d follows entry %d: entries %d to %d were removed or moved", line, e.Seq, prev.Seq, prev.Seq+1, e.Seq-1)
			case e.PrevHash != prev.Hash:
				return rep, fmt.Errorf("line %d: entry %d does not follow entry %d: its prev_hash is not that entry's hash (an entry was replaced)", line, e.Seq, prev.Seq)
			}
		} else {
			rep.First, rep.FirstPrev = e.Seq, e.PrevHash
		}
		rep.Entries++
		rep.Last, rep.Head = e.Seq, e.Hash
		prev = e
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("read: %w", err)
	}
	if rep.Entries == 0 {
		return rep, fmt.Errorf("no audit entries")
	}
	return rep, nil
}
