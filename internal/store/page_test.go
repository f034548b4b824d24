package store

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestEventPagesAreBoundedByBytes: a page of large events ends once their
// stored JSON reaches PageBytes; paging on reads every event once.
func TestEventPagesAreBoundedByBytes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{PageBytes: 10 << 10})
		mustAppend(t, s, createdRec("c", ""))
		big := strings.Repeat("x", 4<<10)
		for range 7 {
			mustAppend(t, s, textRec("c", big))
		}
		var sizes []int
		var after int64
		for {
			page, err := s.Events(t.Context(), agent.EventQuery{After: after, ConversationID: "c", Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			sizes = append(sizes, len(page))
			after = page[len(page)-1].Seq
		}
		// Each event is a little over 4 KiB: the third reaches 10 KiB.
		if got, want := sizes, []int{3, 3, 1}; len(got) != len(want) || got[0] != 3 || got[1] != 3 || got[2] != 1 {
			t.Errorf("page sizes %v, want %v", got, want)
		}
		all, err := s.Events(t.Context(), agent.EventQuery{ConversationID: "c"})
		if err != nil || len(all) != 7 {
			t.Errorf("without a limit: %d events, %v; want all 7", len(all), err)
		}
	})
}
