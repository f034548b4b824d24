package eventlog

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// randomIndex is n records of ascending seqs and offsets: seqs step by 1
// to 3 and offsets by a text delta's frame (100 to 300 bytes), with now
// and then a far jump of either (a seq gap of 2^40 or 2^59, a frame past
// 2^16 or 2^21 bytes) when jumps is set.
func randomIndex(r *rand.Rand, n int, jumps bool) ([]int64, []uint32) {
	seqs, offs := make([]int64, n), make([]uint32, n)
	s, o := int64(r.IntN(1000)+1), uint32(0)
	for i := range n {
		seqs[i], offs[i] = s, o
		s += int64(1 + r.IntN(3))
		o += uint32(100 + r.IntN(200))
		if jumps && r.IntN(20) == 0 {
			switch r.IntN(4) {
			case 0:
				s += 1 << 40
			case 3:
				if s < 1<<61 { // a step of 60 bits: its field straddles 8 bytes
					s += 1 << 59
				}
			case 1:
				o += 1<<16 + uint32(r.IntN(1<<16))
			default:
				o += 1 << 21
			}
		}
	}
	return seqs, offs
}

// TestSegIndexPacked: a sealed (packed) index answers as the plain slices
// it was made of: its length, every record's seq and offset (and two
// records' offsets at once, in one block or two), its first and last, a
// search of every seq held (found at its index) and of every seq between
// and beyond them (not found, at the index of the next), and its walk; at
// every block boundary, empty, with one record, and with steps whose
// fields straddle the 8 bytes a look-up loads; in memory and mapped from
// its file.
func TestSegIndexPacked(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2, packBlock - 1, packBlock, packBlock + 1, 2*packBlock - 1, 2 * packBlock, 2*packBlock + 1, 1000, 1000 + r.IntN(3000)}
	for _, n := range sizes {
		for _, jumps := range []bool{false, true} {
			seqs, offs := randomIndex(r, n, jumps)
			var plain segIndex
			for i := range seqs {
				plain.add(seqs[i], offs[i])
			}
			packed := plain
			packed.seal()
			if !packed.sealed() || plain.sealed() {
				t.Fatalf("n %d: sealed %v, plain sealed %v", n, packed.sealed(), plain.sealed())
			}
			xs := []*segIndex{&plain, &packed}
			if n > 0 { // and served from a file, as the delta log serves it
				mapped, err := packed.toFile(filepath.Join(t.TempDir(), "x.idx"))
				if err != nil {
					t.Fatal(err)
				}
				if mapsFiles && (mapped.m == nil || mapped.size() != 0) {
					t.Fatalf("n %d: a mapped index holds %d bytes of Go's memory", n, mapped.size())
				}
				defer unmapFile(mapped.m)
				xs = append(xs, &mapped)
			}
			for _, x := range xs {
				checkIndex(t, x, seqs, offs)
			}
		}
	}
}

// checkIndex checks x against the plain seqs and offs it holds.
func checkIndex(t *testing.T, x *segIndex, seqs []int64, offs []uint32) {
	t.Helper()
	n := len(seqs)
	if x.len() != n {
		t.Fatalf("sealed %v: len %d, want %d", x.sealed(), x.len(), n)
	}
	if n > 0 && (x.first() != seqs[0] || x.last() != seqs[n-1]) {
		t.Errorf("sealed %v, n %d: first, last %d, %d; want %d, %d", x.sealed(), n, x.first(), x.last(), seqs[0], seqs[n-1])
	}
	for i := range n {
		if s, o := x.seq(i), x.off(i); s != seqs[i] || o != offs[i] {
			t.Fatalf("sealed %v, n %d: record %d is %d at %d, want %d at %d", x.sealed(), n, i, s, o, seqs[i], offs[i])
		}
	}
	for i := range n {
		for _, j := range []int{i + 1, min(n, i+1+i%(2*packBlock+3)), n} {
			wj := uint32(0)
			if j < n {
				wj = offs[j]
			}
			if oi, oj := x.offs2(i, j); oi != offs[i] || oj != wj {
				t.Fatalf("sealed %v, n %d: offs2(%d, %d) = %d, %d; want %d, %d", x.sealed(), n, i, j, oi, oj, offs[i], wj)
			}
		}
	}
	var probes []int64
	for _, s := range seqs {
		probes = append(probes, s-1, s, s+1, s+2)
	}
	probes = append(probes, -1, 0, 1<<62)
	for _, p := range probes {
		wi, wok := slices.BinarySearch(seqs, p)
		if i, ok := x.search(p); i != wi || ok != wok {
			t.Fatalf("sealed %v, n %d: search(%d) = %d, %v; want %d, %v", x.sealed(), n, p, i, ok, wi, wok)
		}
	}
	var walked []int64
	for i, s := range x.all() {
		if i != len(walked) {
			t.Fatalf("sealed %v, n %d: walk gave index %d after %d records", x.sealed(), n, i, len(walked))
		}
		walked = append(walked, s)
	}
	if !slices.Equal(walked, seqs) && n > 0 {
		t.Errorf("sealed %v, n %d: walk gave %d seqs, not the index's", x.sealed(), n, len(walked))
	}
	stopped := 0
	for range x.all() { // a walk stopped early stops
		if stopped++; stopped == 2 {
			break
		}
	}
	if stopped != min(n, 2) {
		t.Errorf("sealed %v, n %d: a walk stopped at its second record yielded %d", x.sealed(), n, stopped)
	}
}

// TestSegIndexSize: a sealed index of text deltas (seqs step by 1 to 3,
// frames of 100 to 300 bytes) holds at most 2 bytes a record, where the
// plain slices hold 12.
func TestSegIndexSize(t *testing.T) {
	t.Parallel()
	seqs, offs := randomIndex(rand.New(rand.NewPCG(3, 4)), 40_000, false)
	x := pack(seqs, offs)
	if per := float64(x.size()) / float64(x.len()); per > 2 {
		t.Errorf("a sealed index holds %.2f bytes a record, want at most 2", per)
	}
}

// BenchmarkSegIndex: a segment's index of 40,000 text deltas (an 8 MiB
// segment's) plain (the active segment's form, and every segment's
// before sealing) and packed, in memory and mapped from its file (a
// sealed segment's): a search of a seq held, a record's offset,
// a walk of all; bytes/record is the Go memory it holds.
func BenchmarkSegIndex(b *testing.B) {
	seqs, offs := randomIndex(rand.New(rand.NewPCG(9, 10)), 40_000, false)
	var plain segIndex
	for i := range seqs {
		plain.add(seqs[i], offs[i])
	}
	plain.seqs, plain.offs = slices.Clip(plain.seqs), slices.Clip(plain.offs)
	packed := pack(seqs, offs)
	mapped, err := packed.toFile(filepath.Join(b.TempDir(), "x.idx"))
	if err != nil {
		b.Fatal(err)
	}
	defer unmapFile(mapped.m)
	for _, c := range []struct {
		name string
		x    *segIndex
	}{{"plain", &plain}, {"packed", &packed}, {"mapped", &mapped}} {
		probe := rand.New(rand.NewPCG(11, 12))
		b.Run(c.name+"/search", func(b *testing.B) {
			for b.Loop() {
				if _, ok := c.x.search(seqs[probe.IntN(len(seqs))]); !ok {
					b.Fatal("not found")
				}
			}
			b.ReportMetric(float64(c.x.size())/float64(c.x.len()), "bytes/record")
		})
		b.Run(c.name+"/off", func(b *testing.B) {
			for b.Loop() {
				c.x.off(probe.IntN(len(seqs)))
			}
		})
		b.Run(c.name+"/offs2", func(b *testing.B) {
			for b.Loop() {
				i := probe.IntN(len(seqs))
				c.x.offs2(i, i+1)
			}
		})
		b.Run(c.name+"/all", func(b *testing.B) {
			for b.Loop() {
				n := 0
				for range c.x.all() {
					n++
				}
			}
		})
	}
}
