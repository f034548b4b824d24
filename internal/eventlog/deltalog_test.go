package eventlog

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// deltaModel is what a delta log holds, kept plainly: every record
// appended (with its JSON as redactions left it) and the floor.
type deltaModel struct {
	recs  []Delta
	floor int64
}

// live is the records above the floor.
func (m *deltaModel) live() []Delta {
	i, _ := slices.BinarySearchFunc(m.recs, m.floor+1, func(d Delta, s int64) int { return int(min(max(d.Seq-s, -1), 1)) })
	return m.recs[i:]
}

// render is a read record as the test compares it.
func render(seq int64, id, conv, owner string, b []byte) string {
	return fmt.Sprintf("%d %s %s %s %s", seq, id, conv, owner, b)
}

func renderAll(evs []agent.Encoded) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = render(e.Seq, e.ID, e.ConversationID, e.Owner, e.JSON)
	}
	return out
}

// want is what the model reads for a filter, at most limit (≤ 0: all).
func (m *deltaModel) want(limit int, keep func(Delta) bool) []string {
	out := []string{}
	for _, d := range m.live() {
		if limit > 0 && len(out) == limit {
			break
		}
		if keep(d) {
			out = append(out, render(d.Seq, d.ID, d.Conv, d.Owner, d.JSON))
		}
	}
	return out
}

// testRedacted is the redaction the test's logs make.
func testRedacted(string) (string, error) { return `{"redacted":true}`, nil }

// openSmallLog opens the delta log at path with segments of about 4 KiB
// (some 25 records), so a few hundred records fill many.
func openSmallLog(t *testing.T, path string) *DeltaLog {
	t.Helper()
	l, err := OpenDeltaLog(path, "e", slog.New(slog.DiscardHandler), testRedacted)
	if err != nil {
		t.Fatal(err)
	}
	l.segMax = 4 << 10
	return l
}

// appendRandom appends n records in commits of 1 to 5, after the model's
// last, and adds them to the model.
func appendRandom(t *testing.T, r *rand.Rand, l *DeltaLog, m *deltaModel, n int) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seq := int64(0)
	if len(m.recs) > 0 {
		seq = m.recs[len(m.recs)-1].Seq
	}
	for n > 0 {
		k := min(n, 1+r.IntN(5))
		n -= k
		recs := make([]Delta, k)
		for i := range recs {
			seq += int64(1 + r.IntN(3))
			recs[i] = Delta{
				Seq:     seq,
				Created: base.Add(time.Duration(seq) * time.Second),
				Conv:    fmt.Sprintf("c%d", r.IntN(3)),
				Owner:   []string{"ann", "bob"}[r.IntN(2)],
				ID:      fmt.Sprintf("%016x", r.Uint64()),
				JSON:    fmt.Appendf(nil, `{"seq":%d,"text":%q}`, seq, bytes.Repeat([]byte("x"), 40+r.IntN(200))),
			}
		}
		if err := l.Append(slices.Clone(recs)); err != nil {
			t.Fatal(err)
		}
		m.recs = append(m.recs, recs...)
	}
}

// checkSealed checks that l has at least min segments and that all but
// the last are sealed, each served from its index file (mapped), which
// the last has none of.
func checkSealed(t *testing.T, l *DeltaLog, least int) {
	t.Helper()
	if len(l.segs) < least {
		t.Fatalf("%d segments, want at least %d", len(l.segs), least)
	}
	for i, seg := range l.segs {
		sealed := i < len(l.segs)-1
		if seg.idx.sealed() != sealed {
			t.Errorf("segment %d of %d: sealed %v", i, len(l.segs), seg.idx.sealed())
		}
		fi, err := os.Stat(seg.path + idxSuffix)
		switch {
		case !sealed && err == nil:
			t.Errorf("the active segment has an index file")
		case !sealed:
		case err != nil:
			t.Errorf("segment %d of %d: %v", i, len(l.segs), err)
		case seg.idx.m == nil || fi.Size() != int64(len(seg.idx.m)):
			t.Errorf("segment %d of %d: served from a mapping of %d bytes, its file has %d", i, len(l.segs), len(seg.idx.m), fi.Size())
		}
	}
}

// idxFiles is the names of the index files (and temporary ones) in l's
// directory.
func idxFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.Contains(e.Name(), idxSuffix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// segIdxFiles is the names of the index files l's sealed segments should
// have.
func segIdxFiles(l *DeltaLog) []string {
	var names []string
	for _, seg := range l.segs[:len(l.segs)-1] {
		names = append(names, filepath.Base(seg.path)+idxSuffix)
	}
	return names
}

// checkReads checks every read of l against the model m.
func checkReads(t *testing.T, r *rand.Rand, l *DeltaLog, m *deltaModel) {
	t.Helper()
	last := m.recs[len(m.recs)-1].Seq
	if h := l.Head(); h != last {
		t.Errorf("Head %d, want %d", h, last)
	}
	if n := l.Count(); n != int64(len(m.live())) {
		t.Errorf("Count %d, want %d", n, len(m.live()))
	}
	// Every segment's first and last seq, and those beside them, as
	// bounds; and some at random.
	var edges []int64
	for _, seg := range l.segs {
		if seg.idx.len() > 0 {
			edges = append(edges, seg.idx.first()-1, seg.idx.first(), seg.idx.last(), seg.idx.last()+1)
		}
	}
	for range 20 {
		edges = append(edges, int64(r.IntN(int(last)+2)))
	}
	edges = append(edges, 0, m.floor, m.floor+1, math.MaxInt64)
	for range 150 {
		after, through := edges[r.IntN(len(edges))], edges[r.IntN(len(edges))]
		limit := []int{0, 1, 7, 50}[r.IntN(4)]
		owner := []string{"", "ann", "bob"}[r.IntN(3)]
		got, err := l.Read(after, through, limit, owner)
		if err != nil {
			t.Fatal(err)
		}
		want := m.want(limit, func(d Delta) bool { return d.Seq > after && d.Seq <= through && (owner == "" || d.Owner == owner) })
		if g := renderAll(got); !slices.Equal(g, want) {
			t.Fatalf("Read(%d, %d, %d, %q):\n got %d %q\nwant %d %q", after, through, limit, owner, len(g), g, len(want), want)
		}
	}
	for range 50 {
		set := map[int64]bool{}
		for range r.IntN(60) {
			set[int64(r.IntN(int(last)+3))] = true
		}
		if r.IntN(4) == 0 { // a run of consecutive seqs across a segment's end
			e := edges[r.IntN(len(edges))]
			for s := e - 30; s < e+30; s++ {
				set[s] = true
			}
		}
		seqs := make([]int64, 0, len(set))
		for s := range set {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		owner := []string{"", "ann"}[r.IntN(2)]
		got, err := l.BySeqs(seqs, owner)
		if err != nil {
			t.Fatal(err)
		}
		want := m.want(0, func(d Delta) bool { return set[d.Seq] && (owner == "" || d.Owner == owner) })
		if g := renderAll(got); !slices.Equal(g, want) {
			t.Fatalf("BySeqs(%v, %q):\n got %q\nwant %q", seqs, owner, g, want)
		}
	}
	for range 30 {
		d := m.recs[r.IntN(len(m.recs))]
		seq, ok, err := l.SeqOf(d.ID)
		if wok := d.Seq > m.floor; err != nil || ok != wok || (ok && seq != d.Seq) {
			t.Errorf("SeqOf(%s) = %d, %v, %v; want %d, %v", d.ID, seq, ok, err, d.Seq, wok)
		}
	}
	if seq, ok, err := l.SeqOf("nope"); ok || err != nil {
		t.Errorf("SeqOf(nope) = %d, %v, %v", seq, ok, err)
	}
	for _, s := range edges[:len(edges)-1] {
		seq, date, ok, err := l.FirstFrom(s)
		var want Delta
		for _, d := range m.live() {
			if d.Seq >= s {
				want = d
				break
			}
		}
		if err != nil || ok != (want.Seq > 0) || seq != want.Seq || (ok && !date.Equal(want.Created)) {
			t.Errorf("FirstFrom(%d) = %d, %v, %v, %v; want %d, %v", s, seq, date, ok, err, want.Seq, want.Created)
		}
		at := m.recs[0].Created.Add(time.Duration(s) * time.Second)
		dseq, ok, err := l.FirstDated(at)
		var wseq int64
		for _, d := range m.live() {
			if !d.Created.Before(at) {
				wseq = d.Seq
				break
			}
		}
		if err != nil || ok != (wseq > 0) || dseq != wseq {
			t.Errorf("FirstDated(%v) = %d, %v, %v; want %d", at, dseq, ok, err, wseq)
		}
		if held := len(m.want(1, func(d Delta) bool { return d.Seq <= s })) > 0; held && !l.Holds(s) {
			t.Errorf("Holds(%d) false, yet a record above the floor %d is at or below it", s, m.floor)
		}
	}
	var each []string
	if err := l.Each(func(d Delta) error {
		each = append(each, render(d.Seq, d.ID, d.Conv, d.Owner, d.JSON))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := m.want(0, func(Delta) bool { return true }); !slices.Equal(each, want) {
		t.Errorf("Each gave %d records, want %d", len(each), len(want))
	}
}

// TestDeltaLogSegments: a delta log of many segments, all but the last
// sealed (packed), reads as the plain model of its records: by range
// (after, through, limit, owner), by seq lists (runs across a segment's
// end), an id's seq, the first record from a seq or a date, Count, Head,
// Each; after redactions, after a Prune that deletes whole segments, after
// appends past it, and after it is opened again.
func TestDeltaLogSegments(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	path := filepath.Join(t.TempDir(), "d.db")
	l := openSmallLog(t, path)
	defer func() { l.Close() }()
	var m deltaModel
	appendRandom(t, r, l, &m, 400)
	checkSealed(t, l, 8)
	checkReads(t, r, l, &m)

	var redact []int64
	for i := range m.recs {
		if r.IntN(10) == 0 {
			redact = append(redact, m.recs[i].Seq)
			b := bytes.Repeat([]byte(" "), len(m.recs[i].JSON))
			copy(b, `{"redacted":true}`)
			m.recs[i].JSON = b
		}
	}
	if err := l.Redact(append(redact, m.recs[len(m.recs)-1].Seq+1)); err != nil {
		t.Fatal(err)
	}
	checkReads(t, r, l, &m)

	segs := len(l.segs)
	m.floor = l.segs[2].idx.seq(l.segs[2].idx.len() / 2)
	if err := l.Prune(m.floor); err != nil {
		t.Fatal(err)
	}
	if len(l.segs) != segs-2 {
		t.Errorf("%d segments after Prune, want %d", len(l.segs), segs-2)
	}
	if got, want := idxFiles(t, l.dir), segIdxFiles(l); !slices.Equal(got, want) {
		t.Errorf("index files after Prune %q, want the kept segments' %q", got, want)
	}
	checkReads(t, r, l, &m)

	appendRandom(t, r, l, &m, 100)
	checkSealed(t, l, segs)
	checkReads(t, r, l, &m)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openSmallLog(t, path)
	if err := l.Prune(m.floor); err != nil { // the store gives it its floor again
		t.Fatal(err)
	}
	checkSealed(t, l, segs)
	checkReads(t, r, l, &m)
	appendRandom(t, r, l, &m, 100)
	checkReads(t, r, l, &m)
}

// TestDeltaLogSealedSize: the delta log's sealed segments hold no byte of
// their index in Go's memory (mapped from their files; where files are
// not mapped, at most 2 bytes a record of text deltas, the plain index
// 12), at their sealing and when opened again.
func TestDeltaLogSealedSize(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	path := filepath.Join(t.TempDir(), "d.db")
	l := openSmallLog(t, path)
	l.segMax = 256 << 10
	var m deltaModel
	appendRandom(t, r, l, &m, 6000)
	check := func(when string) {
		t.Helper()
		checkSealed(t, l, 3)
		for i, seg := range l.segs[:len(l.segs)-1] {
			if n := seg.idx.size(); mapsFiles && n != 0 {
				t.Errorf("%s: segment %d holds %d bytes of Go's memory, want none", when, i, n)
			}
			if per := float64(seg.idx.size()) / float64(seg.idx.len()); per > 2 {
				t.Errorf("%s: segment %d holds %.2f bytes a record, want at most 2", when, i, per)
			}
		}
	}
	check("written")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openSmallLog(t, path)
	defer l.Close()
	check("opened again")
}

// TestDeltaLogReadsOwnerPastSegment: a read of an owner's records with a
// limit goes on past a segment that held more records than the limit but
// fewer of the owner's: it stopped there, short of its limit, so the
// merge took it as complete through its bound and a page lost the
// owner's deltas of the next segments.
func TestDeltaLogReadsOwnerPastSegment(t *testing.T) {
	t.Parallel()
	l, err := OpenDeltaLog(filepath.Join(t.TempDir(), "d.db"), "e", slog.New(slog.DiscardHandler), func(p string) (string, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.segMax = 1 << 10
	for seq := int64(1); seq <= 40; seq++ {
		owner := "bob"
		if seq > 20 {
			owner = "ann"
		}
		if err := l.Append([]Delta{{Seq: seq, Conv: "c", Owner: owner, ID: fmt.Sprint(seq), JSON: []byte(`{"text":"0123456789012345678901234567890123456789"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(l.segs))
	}
	got, err := l.Read(0, math.MaxInt64, 5, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Seq != 21 || got[4].Seq != 25 {
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		t.Errorf("ann's first 5: %v, want 21 to 25", seqs)
	}
}

// BenchmarkDeltaLogReads: reads of a segment of 40,000 text deltas, its
// index plain (the active segment) and sealed (mapped from its file): a
// conversation's page of 100 seqs (every third record) by BySeqs, a range
// of 100 by Read, and an id's record by FirstFrom (two offsets, one frame
// read).
func BenchmarkDeltaLogReads(b *testing.B) {
	l, err := OpenDeltaLog(filepath.Join(b.TempDir(), "d.db"), "e", slog.New(slog.DiscardHandler), testRedacted)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := rand.New(rand.NewPCG(13, 14))
	var seqs []int64
	for seq := int64(1); len(seqs) < 40_000; {
		recs := make([]Delta, 1+r.IntN(5))
		for i := range recs {
			seq += int64(1 + r.IntN(3))
			seqs = append(seqs, seq)
			recs[i] = Delta{Seq: seq, Conv: "c", Owner: "ann", ID: fmt.Sprintf("%016x", seq), JSON: fmt.Appendf(nil, `{"seq":%d,"text":%q}`, seq, bytes.Repeat([]byte("x"), 40+r.IntN(200)))}
		}
		if err := l.Append(recs); err != nil {
			b.Fatal(err)
		}
	}
	for _, sealed := range []bool{false, true} {
		if sealed {
			l.segs[0].idx = l.sealIndex(l.segs[0]) // mapped, as a sealed segment's
		}
		name := map[bool]string{false: "plain", true: "packed"}[sealed]
		b.Run(name+"/BySeqs", func(b *testing.B) {
			page := make([]int64, 100)
			for b.Loop() {
				at := r.IntN(len(seqs) - 300)
				for i := range page {
					page[i] = seqs[at+3*i]
				}
				if evs, err := l.BySeqs(page, ""); err != nil || len(evs) != 100 {
					b.Fatal(len(evs), err)
				}
			}
		})
		b.Run(name+"/Read", func(b *testing.B) {
			for b.Loop() {
				if evs, err := l.Read(seqs[r.IntN(len(seqs)-200)], math.MaxInt64, 100, ""); err != nil || len(evs) != 100 {
					b.Fatal(len(evs), err)
				}
			}
		})
		b.Run(name+"/FirstFrom", func(b *testing.B) {
			for b.Loop() {
				if _, _, ok, err := l.FirstFrom(seqs[r.IntN(len(seqs))]); err != nil || !ok {
					b.Fatal(err)
				}
			}
		})
	}
}
