package store

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestVersionMovesWithEveryCommit: Version moves before each Append
// returns (with or without a publisher), not with reads; on PostgreSQL it
// also moves when another instance commits.
func TestVersionMovesWithEveryCommit(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			var rec recorder
			for _, s := range []*Store{open(t, dsn, Options{Publish: rec.publish}), open(t, be.dsn(t), Options{})} {
				cid := "c-" + newID()
				for _, recs := range [][]*agent.Record{
					{createdRec(cid, "a")},
					{renamedRec(cid, "b")},
					{userRec(cid, "hi", "")},
					{textRec(cid, " t")},
					{deletedRec(cid)},
				} {
					v := s.Version()
					mustAppend(t, s, recs...)
					if s.Version() <= v {
						t.Fatalf("Version %d after an Append of %s, %d before", s.Version(), recs[0].Event.ID, v)
					}
				}
				v := s.Version()
				if _, _, err := s.Conversations(t.Context(), 0, 10); err != nil {
					t.Fatal(err)
				}
				if s.Version() != v {
					t.Fatalf("Version moved with a read: %d → %d", v, s.Version())
				}
			}
		})
	}
	t.Run("postgres other instance", func(t *testing.T) {
		dsn := postgresOnly(t)
		var seen recorder
		a := open(t, dsn, Options{Publish: seen.publish})
		b := open(t, dsn, Options{})
		v := a.Version()
		mustAppend(t, b, createdRec("c1", "from b"))
		seen.waitSeq(t, 1)
		if a.Version() <= v {
			t.Fatalf("Version did not move when another instance committed")
		}
	})
}
